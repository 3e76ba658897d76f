/**
 * The hosted page of a payment link (`/pay/<id>`, CONTRACT §12, §16). The link id is the
 * capability; a page view hands out a payment_form client token bound to the link (its amount
 * unless editable, its payer and biller), and the page pays with `payment_link_id`, so the link's
 * own rules (amount, one payment for a one-time link, invoice allocation) decide the payment.
 *
 * Tokens are not minted per view (CONTRACT §23): a visitor (a client address) viewing the page
 * again gets the token this process gave it, while it can still pay; and at most
 * USABLE_TOKENS_PER_LINK of a link's tokens stay usable, a new one retiring the oldest.
 */
import { CLIENT_TOKEN_LIFETIME_MS, createClientToken } from '../families/intents/clientTokens.ts';
import { isUnspentAccessToken, retireOldLinkTokens } from '../db/accessTokens.ts';
import type { Db } from '../db/connection.ts';
import { hashKey } from '../keys.ts';
import { isPlainObject } from '../engine/view.ts';
import { renderClosedPage, renderPaymentPage } from './checkoutPage.ts';
import { findPaymentLinkById, type PaymentLinkRow } from './repository.ts';

const LINK_ID = /^pay_[A-Za-z0-9]{10,64}$/;
export const USABLE_TOKENS_PER_LINK = 5;
/** A token handed out again must leave the visitor this long to pay. */
const REUSE_MARGIN_MS = 5 * 60_000;
const VISITORS_KEPT = 10_000;

/** The token each visitor of each link was last given, in this process. */
export class VisitorTokens {
  readonly #given = new Map<string, { token: string; expiresAt: number }>();

  async tokenFor(db: Db, linkId: string, visitor: string, now: Date): Promise<string | null> {
    const given = this.#given.get(`${linkId} ${visitor}`);
    if (!given || given.expiresAt - REUSE_MARGIN_MS <= now.getTime()) return null;
    return (await isUnspentAccessToken(db, hashKey(given.token), REUSE_MARGIN_MS)) ? given.token : null;
  }

  remember(linkId: string, visitor: string, token: string, now: Date): void {
    if (this.#given.size >= VISITORS_KEPT) {
      for (const [key, value] of this.#given) if (value.expiresAt <= now.getTime()) this.#given.delete(key);
      // Still full of live tokens: the oldest half goes (a visitor forgotten gets a new token, within the cap).
      if (this.#given.size >= VISITORS_KEPT) for (const key of [...this.#given.keys()].slice(0, VISITORS_KEPT / 2)) this.#given.delete(key);
    }
    this.#given.set(`${linkId} ${visitor}`, { token, expiresAt: now.getTime() + CLIENT_TOKEN_LIFETIME_MS });
  }
}

async function findPaymentLink(db: Db, id: string): Promise<PaymentLinkRow | null> {
  return LINK_ID.test(id) ? findPaymentLinkById(db, id) : null;
}

function accountOf(data: Record<string, unknown>, side: string): string | undefined {
  const party = data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

/** The page for `/pay/<id>` as `visitor` (the client's address) sees it: its HTTP status and HTML. */
export async function paymentLinkPage(db: Db, id: string, now: Date, visitor: string, visitors: VisitorTokens): Promise<{ status: number; html: string }> {
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
  let token = await visitors.tokenFor(db, link.id, visitor, now);
  if (!token) {
    token = String((await createClientToken(db, tenant, { type: 'client', intent: { payment_form: { payment } } }, now, link.id)).id);
    visitors.remember(link.id, visitor, token, now);
    await retireOldLinkTokens(db, link.id, USABLE_TOKENS_PER_LINK);
  }
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
      token,
      paymentLinkId: link.id,
    }),
  };
}
