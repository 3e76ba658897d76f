/**
 * `DELETE /test_data` with a test secret key: resets the caller's test environment
 * (api/testData.ts) and answers `{object: 'test_data_reset', deleted: {<collection>: n, …},
 * default_processing_account_id}`. A live key or a client token is 403.
 *
 * Every other request of a test environment passes the tenant gate here (api/tenantGate.ts), after
 * authentication and before it reads or writes anything (idempotency records included), so none
 * overlaps a reset of its environment. Live environments, which are never reset, skip it.
 */
import type { Context, Middleware, Next } from 'koa';
import { forbidden } from '../errors.ts';
import { databaseTenantGate } from '../tenantGate.ts';
import { resetTestData } from '../testData.ts';
import type { AppServices, RequestState } from './state.ts';

type Ctx = Context & { state: RequestState };

async function reset(ctx: Ctx): Promise<void> {
  const { principal, tenant, key } = ctx.state;
  if (principal?.kind !== 'secret' || !key || tenant?.environment !== 'test') throw forbidden('Test data is reset with a test secret key');
  ctx.body = await resetTestData(ctx.state.services.db, tenant, key.org_name, principal, ctx.state.services.domain);
}

export function testDataRoutes(services: AppServices): Middleware {
  const { gate } = databaseTenantGate(services.config.databaseUrl ?? '', services.db);
  return async (ctx: Ctx, next: Next) => {
    if (ctx.path === '/test_data' && ctx.method === 'DELETE') return reset(ctx);
    const tenant = ctx.state.tenant;
    if (!tenant) return next();
    await gate.around(tenant, next);
  };
}
