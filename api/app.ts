/** The web application: the middleware chain in the order a request meets it. */
import Koa from 'koa';
import type { Context, Next } from 'koa';
import { accessTokenRoutes } from './http/accessTokenRoutes.ts';
import { keyRoutes } from './http/keyRoutes.ts';
import { browserRoutes } from './browser/routes.ts';
import { consoleRoutes } from './console/routes.ts';
import { docsRoutes } from './http/docsRoutes.ts';
import { webhookRoutes } from './http/webhookRoutes.ts';
import { paymentLinkRoutes } from './http/paymentLinkRoutes.ts';
import { invoiceRoutes } from './http/invoiceRoutes.ts';
import { clientScope, createAuthenticator, keyScope } from './http/auth.ts';
import { auditActor } from './http/auditActor.ts';
import { createBodyParser } from './http/body.ts';
import { errorHandler } from './http/errorHandler.ts';
import { clientTokenCors } from './http/cors.ts';
import { idempotency } from './http/idempotency.ts';
import { objectRoutes } from './http/objectRoutes.ts';
import { orgRoutes } from './http/orgRoutes.ts';
import { openApiRoute } from './http/openapiRoute.ts';
import { metricsRoute, recordRequest } from './http/metricsRoute.ts';
import { testClockRoutes } from './http/testClockRoutes.ts';
import { testDataRoutes } from './http/testDataRoutes.ts';
import { createRateLimiter } from './http/rateLimit.ts';
import { RequestScope, type AppServices, type RequestState } from './http/state.ts';
import { apiVersion } from './http/version.ts';
import { requestIdFor } from './http/requestId.ts';
import { firstSegmentGate } from './http/routerGate.ts';
import { RequestLogShipper, requestLogRoute, requestLogRow, shouldLog } from './http/requestLog.ts';
import { serviceUnavailable } from './errors.ts';
import { pingDatabase } from './db/health.ts';

type Ctx = Context & { state: RequestState };

export interface AppOptions {
  /** ms an API key lookup is cached; 0 in tests that revoke keys */
  keyCacheMs?: number;
  isDraining?: () => boolean;
}

export function createApp(services: AppServices, options: AppOptions = {}): Koa {
  // Behind trusted proxies the client's address is the one the outermost of them saw (SETTLE_TRUST_PROXY).
  const app = new Koa({ proxy: services.config.trustedProxies > 0, maxIpsCount: services.config.trustedProxies });
  app.silent = true;
  const routes = objectRoutes();
  const { config } = services;
  const requestLog = config.reportingUrl === null ? null : new RequestLogShipper(config.reportingUrl, config.reportingSecret, config.requestLogBuffer, services.log);

  app.use(async (ctx: Ctx, next: Next) => {
    const started = performance.now();
    ctx.state = new RequestScope(requestIdFor(ctx.get('X-Request-Id') || undefined), services);
    ctx.set('X-Request-Id', ctx.state.requestId);
    // Trailing slashes (`/customers/?email=…`) name the same collection.
    if (ctx.path.length > 1 && ctx.path.endsWith('/')) ctx.path = ctx.path.replace(/\/+$/, '');
    try {
      await next();
    } catch (error) {
      // Koa answers an error that escapes the chain with only the error's own headers.
      if (error instanceof Error) Object.assign(error, { headers: { ...(error as { headers?: object }).headers, 'X-Request-Id': ctx.state.requestId } });
      throw error;
    }
    recordRequest(ctx, started);
    if (requestLog && shouldLog(ctx.path)) requestLog.add(requestLogRow(ctx, started));
    if (services.log.isLevelEnabled('info')) ctx.state.log.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
  });
  app.use(clientTokenCors);
  app.use(errorHandler);
  app.use(async (ctx: Ctx, next: Next) => {
    if (ctx.path !== '/healthz') {
      if (options.isDraining?.()) {
        ctx.set('Connection', 'close');
        throw serviceUnavailable('Server is shutting down');
      }
      return next();
    }
    try {
      await pingDatabase(services.db);
      ctx.body = { object: 'health', status: 'ok' };
    } catch {
      throw serviceUnavailable('Database unavailable');
    }
  });
  app.use(openApiRoute);
  app.use(firstSegmentGate(docsRoutes()));
  app.use(metricsRoute);
  const rateLimit = createRateLimiter(services.db, services.config.rateLimit, () => services.domain.now().getTime());
  app.use(rateLimit.requests);
  app.use(firstSegmentGate(browserRoutes()));
  app.use(firstSegmentGate(consoleRoutes()));
  app.use(createAuthenticator(options.keyCacheMs ?? 2000));
  // Counted before the scopes: a credential hammering routes it may not use is limited too.
  app.use(rateLimit.requests);
  app.use(clientScope);
  app.use(keyScope);
  app.use(auditActor);
  app.use(apiVersion);
  app.use(requestLogRoute(requestLog, config));
  app.use(createBodyParser(services.config.bodyLimit));
  app.use(rateLimit.declinedPayments);
  app.use(testDataRoutes(services));
  app.use(idempotency);
  app.use(firstSegmentGate(accessTokenRoutes()));
  app.use(firstSegmentGate(keyRoutes()));
  app.use(firstSegmentGate(webhookRoutes()));
  app.use(firstSegmentGate(paymentLinkRoutes()));
  app.use(firstSegmentGate(invoiceRoutes()));
  app.use(firstSegmentGate(orgRoutes()));
  app.use(firstSegmentGate(testClockRoutes()));
  app.use(routes.routes());
  return app;
}
