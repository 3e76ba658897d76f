/**
 * Automatic payments (CONTRACT §12): on its due date and once a day for the next 5 days, an unpaid
 * or partially paid invoice that allows autopay is charged its balance from `payer.method_id` or
 * the payer's default paying method, through the same payment pipeline as a client's payment
 * (allocation included). The payment carries `trigger: automatic` and emits `automatic_payment`
 * (and `payment`). A declined attempt stores a zero-amount payment item on the invoice; the next
 * day's run tries again. One attempt per invoice per day, recorded with it.
 */
import type { Db } from '../../db/connection.ts';
import { recordEvents } from '../../db/events.ts';
import type { DomainServices, RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import { createFromValues, updateNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { ApiError } from '../../errors.ts';
import { decidedOutside, ProcessorDecisions } from '../../processorDecisions.ts';
import { calendarDate } from '../invoices/kinds.ts';
import { OPEN_TO_PAYMENTS } from '../invoices/itemRules.ts';
import { invoices } from '../invoices/family.ts';
import { recordPaymentAllocations } from '../invoices/paidBy.ts';
import { lockInvoice } from '../invoices/repository.ts';
import { transactions } from '../transactions/family.ts';
import { defaultPayingMethod } from '../transactions/repository.ts';
import { invoicesForAutopay } from './repository.ts';
import { AUTOMATIC_PAYMENT_TRIGGER } from './triggers.ts';

export const AUTOPAY_RETRY_DAYS = 5;

function party(invoice: StoredObject, side: 'payer' | 'biller'): Json {
  return isPlainObject(invoice.data[side]) ? (invoice.data[side] as Json) : {};
}

/**
 * One attempt on one invoice, in the caller's transaction; the payment id, or null when nothing was
 * tried. The day's attempt is noted through the invoice family's update after the payment is
 * created, whatever came of it: every write follows the processor's answer.
 */
async function attempt(ctx: RuleContext, invoiceId: string, today: string): Promise<string | null> {
  const invoice = await lockInvoice(ctx.tx, ctx.tenant, invoiceId);
  if (!invoice || !OPEN_TO_PAYMENTS.has(String(invoice.data.status)) || String(invoice.data.last_autopay_on ?? '') >= today) return null;
  const payment = await charge(ctx, invoice);
  // The payment may have changed the invoice (its balance, its status): the mark goes on the row as it now stands.
  const current = payment ? await lockInvoice(ctx.tx, ctx.tenant, invoiceId) : invoice;
  await updateNested(ctx, invoices, current!, {}, new Map([['last_autopay_on', today]]));
  return payment?.id ?? null;
}

/** The invoice's balance charged to its payer's method; null when there is none to charge, or the create refused. */
async function charge(ctx: RuleContext, invoice: StoredObject): Promise<StoredObject | null> {
  const payer = String(party(invoice, 'payer').account_id);
  const methodId = party(invoice, 'payer').method_id ?? (await defaultPayingMethod(ctx.tx, ctx.tenant, payer))?.id;
  const balance = Number((invoice.data.totals as Json).balance_due);
  if (!methodId || balance <= 0) return null;
  // Stored values (the balance in minor units, as the invoice holds it), through the one create.
  const values = {
    amount: balance, customer_id: payer, processing_id: party(invoice, 'biller').account_id, payment_method_id: methodId,
    allocations: [{ entry_type: 'payment', invoice_id: invoice.id }], trigger: 'automatic',
  };
  let payment: StoredObject;
  try {
    // A savepoint: a refused attempt (an expired method) is rolled back alone, and the day's mark still follows.
    payment = await ctx.tx.transaction((sp) => createFromValues({ ...ctx, tx: sp }, transactions, 'payment', values));
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) return null;
    throw error;
  }
  if (payment.data.status === 'declined') {
    await recordPaymentAllocations(ctx, payment, [{ invoice_id: invoice.id, amount: 0 }]);
  } else {
    await recordEvents(ctx.tx, ctx.tenant, [{
      trigger: AUTOMATIC_PAYMENT_TRIGGER, objectType: 'transaction', objectId: payment.id,
      value: { type: 'payment', status: payment.data.status, amount: Number(payment.data.amount) / 100, invoice_id: invoice.id },
    }]);
  }
  return payment;
}

/** The automatic payments of one tenant as of `asOf`; returns the ids of the payments attempted. */
export async function collectAutomaticPayments(db: Db, domain: DomainServices, tenant: Tenant, asOf: Date): Promise<string[]> {
  const today = calendarDate(asOf);
  const from = calendarDate(new Date(asOf.getTime() - AUTOPAY_RETRY_DAYS * 86_400_000));
  const attempted: string[] = [];
  for (const invoice of await invoicesForAutopay(db, tenant, from, today, today)) {
    const decisions = new ProcessorDecisions(domain.processor);
    const id = await decidedOutside(decisions, () => db.transaction((tx) => attempt({
      tx, tenant, version: 'v1', domain, decisions, principal: { kind: 'secret', keyId: 'automatic_payments', settings: {} },
    }, invoice.id, today)));
    if (id) attempted.push(id);
  }
  return attempted;
}
