/**
 * What browsers load from the web process without an API key (CONTRACT §16): the client library,
 * the secure-input, checkout and processing-account frames and the hosted checkout, payment-link
 * and enrollment pages. Registered before authentication; every document carries a strict
 * Content-Security-Policy and loads nothing from another origin.
 */
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { HOSTED_PAGES, runAsPage } from '../http/auditActor.ts';
import type { RequestState } from '../http/state.ts';
import { shownPrefix } from '../keys.ts';
import { ASSETS, assetUrl, serveAsset } from './assets.ts';
import { findCheckout } from './checkoutToken.ts';
import { pluginView, renderCheckout, renderClosed, renderPaymentPage } from './checkoutPage.ts';
import { paymentLinkPage, VisitorTokens } from './paymentLinkPage.ts';
import { showEnrollPage, submitEnrollPage } from './enrollPage.ts';
import { showProcessingAccountFrame, submitProcessingAccountFrame } from './processingAccountPage.ts';

const BASE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'";
/** Secure inputs are framed by merchants' pages, on any origin. */
const FRAME_CSP = `${BASE_CSP}; frame-ancestors *`;
/** Hosted pages are never framed (no clickjacking of the pay button). */
const PAGE_CSP = `${BASE_CSP}; frame-ancestors 'none'`;

function sendHtml(ctx: Context, status: number, html: string, csp: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Content-Security-Policy', csp);
  ctx.set('X-Content-Type-Options', 'nosniff');
  // The checkout page's address is its capability: never sent onwards as a referrer.
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
  ctx.body = html;
}

const FRAME_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Secure payment input</title>
<link rel="stylesheet" href="${assetUrl('/elements/element.css')}">
<script src="${assetUrl('/elements/inputs.js')}" defer></script>
<script src="${assetUrl('/elements/element.js')}" defer></script>
</head>
<body></body>
</html>
`;

async function checkoutPage(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  const token = ctx.params.token;
  // Other capabilities (checkout_link intents) are someone else's page; an unknown one gets ours.
  if (!/^(test_)?client_key_/.test(token)) {
    try {
      await next();
      if (ctx.status !== 404 || ctx.body !== undefined) return;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status !== 401 && status !== 403 && status !== 404) throw error;
    }
    return sendHtml(ctx, 404, renderClosed({ state: 'unknown' }), PAGE_CSP);
  }
  const checkout = await findCheckout(ctx.state.services.db, token);
  if (checkout.state === 'open') return sendHtml(ctx, 200, renderCheckout(checkout.options), PAGE_CSP);
  sendHtml(ctx, checkout.state === 'unknown' ? 404 : 410, renderClosed(checkout), PAGE_CSP);
}

export function browserRoutes(): Router {
  const router = new Router();
  const visitors = new VisitorTokens();
  for (const [path, asset] of Object.entries(ASSETS)) router.get(path, (ctx) => serveAsset(ctx, asset));
  router.get('/elements/input', (ctx) => sendHtml(ctx, 200, FRAME_HTML, FRAME_CSP));
  router.get('/elements/controller', (ctx) => sendHtml(ctx, 200, FRAME_HTML, FRAME_CSP));
  router.get('/checkout/:token', checkoutPage);
  // Payload.Checkout's frame: the checkout_plugin token's payment form, framed by the merchant.
  router.get('/elements/checkout/:token', async (ctx) => {
    const checkout = await findCheckout((ctx.state as RequestState).services.db, ctx.params.token, 'checkout_plugin');
    if (checkout.state === 'open') return sendHtml(ctx, 200, renderPaymentPage(pluginView(checkout.options)), FRAME_CSP);
    sendHtml(ctx, checkout.state === 'unknown' ? 404 : 410, renderClosed(checkout), FRAME_CSP);
  });
  // Payload.ProcessingAccount's frame: a processing_account_plugin token's onboarding form, framed
  // by the merchant, posting back to itself.
  const PLUGIN_CSP = FRAME_CSP.replace("form-action 'none'", "form-action 'self'");
  router.get('/elements/processing-account/:token', async (ctx) => {
    const page = await showProcessingAccountFrame((ctx.state as RequestState).services.db, ctx.params.token);
    sendHtml(ctx, page.status, page.html, PLUGIN_CSP);
  });
  router.post('/elements/processing-account/:token', async (ctx) => {
    const token = ctx.params.token;
    const page = await runAsPage(ctx, HOSTED_PAGES.processingAccount, shownPrefix(token), () => submitProcessingAccountFrame(ctx, token));
    sendHtml(ctx, page.status, page.html, PLUGIN_CSP);
  });
  // Enrollment pages post a plain form back to themselves (form-action 'self').
  const ENROLL_CSP = PAGE_CSP.replace("form-action 'none'", "form-action 'self'");
  router.get('/enroll/:id', async (ctx) => {
    const page = await showEnrollPage(ctx as Context & { state: RequestState }, ctx.params.id);
    sendHtml(ctx, page.status, page.html, ENROLL_CSP);
  });
  router.post('/enroll/:id', async (ctx) => {
    const id = ctx.params.id;
    const page = await runAsPage(ctx, HOSTED_PAGES.enroll, id, () => submitEnrollPage(ctx, id));
    sendHtml(ctx, page.status, page.html, ENROLL_CSP);
  });
  router.get('/pay/:id', async (ctx) => {
    const { db, domain } = (ctx.state as RequestState).services;
    const page = await paymentLinkPage(db, ctx.params.id, domain.now(), ctx.ip, visitors);
    sendHtml(ctx, page.status, page.html, PAGE_CSP);
  });
  return router;
}
