/**
 * The hosted page of a payment link (`/pay/<id>`, CONTRACT §12, §16). The link id is the
 * capability; each page view mints a payment_form client token bound to the link (its amount
 * unless editable, its payer and biller), and the page pays with `payment_link_id`, so the link's
 * own rules (amount, one payment for a one-time link, invoice allocation) decide the payment.
 */
import { createClientToken } from '../families/intents/clientTokens.ts';
import type { Db } from '../db/connection.ts';
import { isPlainObject } from '../engine/view.ts';
import { renderClosedPage, renderPaymentPage } from './checkoutPage.ts';
import { findPaymentLinkById, type PaymentLinkRow } from './repository.ts';

const LINK_ID = /^pay_[A-Za-z0-9]{10,64}$/;

async function findPaymentLink(db: Db, id: string): Promise<PaymentLinkRow | null> {
  return LINK_ID.test(id) ? findPaymentLinkById(db, id) : null;
}

function accountOf(data: Record<string, unknown>, side: string): string | undefined {
  const party = data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

/** The page for `/pay/<id>`: its HTTP status and HTML. */
export async function paymentLinkPage(db: Db, id: string, now: Date): Promise<{ status: number; html: string }> {
  const link = await findPaymentLink(db, id);
  if (!link) return { status: 404, html: renderClosedPage('Payment link not found', 'This payment link is not valid. Check the address, or ask the merchant for a new link.', null) };
  const data = link.data;
  if (data.status === 'completed') return { status: 410, html: renderClosedPage('This payment link has been paid', 'A payment was already made with this link. Nothing more is due here.', null) };
  if (data.status !== 'active') return { status: 410, html: renderClosedPage('This payment link is no longer active', 'Ask the merchant for a new link.', null) };

  const editable = data.amount_editable === true || typeof data.amount !== 'number';
  const amount = editable ? null : (Number(data.amount) / 100).toFixed(2);
  const payment: Record<string, unknown> = { description: String(data.description ?? 'Payment') };
  if (amount !== null) payment.amount = amount;
  const payer = accountOf(data, 'payer');
  const biller = accountOf(data, 'biller');
  if (payer) payment.customer_id = payer;
  if (biller) payment.processing_id = biller;
  const tenant = { orgId: link.org_id, environment: link.environment };
  const token = await createClientToken(db, tenant, { type: 'client', intent: { payment_form: { payment } } }, now);
  const options = isPlainObject(data.checkout_options) ? data.checkout_options : {};
  const card = options.card_payments !== false;
  return {
    status: 200,
    html: renderPaymentPage({
      amount,
      description: String(data.description ?? ''),
      card,
      bank: options.bank_account_payments === true || !card,
      billingAddress: options.billing_address === true,
      completedUrl: null,
      backUrl: null,
      token: String(token.id),
      paymentLinkId: link.id,
    }),
  };
}
