/** Invoice actions: `/invoices/{id}/resend_email`. */
import Router from '@koa/router';
import type { Context } from 'koa';
import { sendInvoiceEmail } from '../families/payment_links/invoiceEmails.ts';
import { forbidden } from '../errors.ts';
import { grants } from '../scopes.ts';
import { completeInTransaction } from './idempotency.ts';
import { refuseUnknown } from './rotation.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState; params: Record<string, string> };

const LINK_SCOPE = 'payment_links:write';

export function invoiceRoutes(): Router {
  const router = new Router();

  router.post('/invoices/:id/resend_email', async (ctx) => {
    const c = ctx as Ctx;
    refuseUnknown(c.state.body ?? {}, []);
    // The message may make the payment link it names: a restricted key needs that scope too.
    if (c.state.principal?.kind === 'secret' && !grants(c.state.key?.scopes ?? null, LINK_SCOPE)) {
      throw forbidden(`This key lacks the scope ${LINK_SCOPE}`, { scope: LINK_SCOPE });
    }
    const { db, domain } = c.state.services;
    const { tenant, version, principal } = c.state;
    c.body = await db.transaction(async (tx) => {
      const sent = await sendInvoiceEmail({ tx, tenant: tenant!, version, principal: principal!, domain }, c.params.id);
      const answer = {
        object: 'invoice_email', id: sent.id, invoice_id: c.params.id, recipient: sent.recipient, resend: sent.resend,
        payment_link_id: sent.paymentLinkId, url: sent.url,
      };
      await completeInTransaction(c, tx, 200, answer);
      return answer;
    });
  });

  return router;
}
