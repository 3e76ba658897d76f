/** Headers every page Settle serves without a key carries (console, API reference): no sniffing, no referrer. */
import type { Context } from 'koa';

export function secureHeaders(ctx: Context): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
}
