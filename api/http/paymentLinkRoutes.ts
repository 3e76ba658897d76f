/** Payment link actions: `/payment_links/{id}/resend_email`. */
import Router from '@koa/router';
import type { Context } from 'koa';
import { resendPaymentLinkEmail } from '../families/payment_links/emails.ts';
import { completeInTransaction } from './idempotency.ts';
import { refuseUnknown } from './rotation.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState; params: Record<string, string> };

export function paymentLinkRoutes(): Router {
  const router = new Router();

  router.post('/payment_links/:id/resend_email', async (ctx) => {
    const c = ctx as Ctx;
    refuseUnknown(c.state.body ?? {}, []);
    const queued = await resendPaymentLinkEmail(c.state.services.db, c.state.tenant!, c.params.id);
    const answer = { object: 'payment_link_email', id: queued.id, payment_link_id: c.params.id, recipient: queued.recipient, resend: queued.resend };
    await completeInTransaction(c, c.state.services.db, 200, answer);
    c.body = answer;
  });

  return router;
}
