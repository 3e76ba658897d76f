/**
 * Sandbox disputes (CONTRACT §14): a processed payment by a disputed sandbox card is charged back
 * about a second later (a `chargeback` transaction for what was not refunded, linked by
 * `assoc_transaction_id`), and with the reversing card the chargeback is reversed a second after
 * that. Both are paying transactions: funded with the next run (timing `rapid`), so a chargeback
 * is taken from the next deposit. Each runs under a lock on the transaction it disputes and checks
 * for an earlier one first, so a retried job never disputes twice.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';
import { createSystemTransaction } from '../transactions/systemMade.ts';
import { refundedAmount, scheduleJob } from '../transactions/repository.ts';
import { hasLinkedTransfer, lockTransactionById } from './chargebackRepository.ts';
import { recordFundingSteps } from '../transactions/funding.ts';

/** The card network acting on a tenant's transactions. */
function networkContext(tx: Db, domain: DomainServices, tenant: Tenant): RuleContext {
  return { tx, tenant, version: 'v1', domain, principal: { kind: 'secret', keyId: 'card_network', settings: {} } };
}

/**
 * A dispute transaction against `original`, moving `amount` the other way, through the one create
 * service: its transfer row names the original, whose ledger shows it too.
 */
async function createDispute(ctx: RuleContext, original: StoredObject, amount: number, type: 'chargeback' | 'chargeback_reversal'): Promise<StoredObject> {
  const o = original.data;
  const toCustomer = type === 'chargeback';
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return createSystemTransaction(ctx, {
    type, madeBy: 'card_network', amount,
    customerId: text(o.customer_id), processingId: text(o.processing_id),
    method: typeof o.payment_method_id === 'string' ? { id: o.payment_method_id, type: String(o.payment_method_type) } : null,
    methodFacts: { payment_method: (o.payment_method as Json) ?? null, payment_method_type: text(o.payment_method_type), card_brand: text(o.card_brand) },
    statusCode: type,
    statusMessage: toCustomer ? 'Charged back by the card network' : 'Chargeback reversed by the card network',
    fundingTiming: 'rapid',
    entries: [{ entry_type: type, account_id: text(o.customer_id), assoc_transaction_id: original.id, amount, mirror: toCustomer ? -amount : amount }],
  });
}

/** Charges back a disputed payment; schedules the reversal when its card says so. */
export async function chargeBack(db: Db, domain: DomainServices, paymentId: string, now: Date): Promise<string | null> {
  return db.transaction(async (tx) => {
    const payment = await lockTransactionById(tx, paymentId);
    if (!payment || payment.type !== 'payment' || payment.data.status !== 'processed') return null;
    if (await hasLinkedTransfer(tx, payment.id, 'chargeback')) return null;
    // The dispute is for what the cardholder was still out of: refunds already returned the rest.
    const disputed = Number(payment.data.amount) - (await refundedAmount(tx, payment.id));
    if (disputed <= 0) return null;
    const tenant: Tenant = { orgId: payment.org_id, environment: payment.environment };
    const chargeback = await createDispute(networkContext(tx, domain, tenant), payment, disputed, 'chargeback');
    await recordFundingSteps(tx, tenant, [{ id: payment.id, amount: Number(payment.data.amount), steps: ['chargeback'] }]);
    if (payment.data.sandbox_chargeback === 'chargeback_reversal') {
      await scheduleJob(tx, 'sandbox_chargeback_reversal', { transaction_id: chargeback.id }, new Date(now.getTime() + 1000), `chargeback_reversal:${chargeback.id}`);
    }
    return chargeback.id;
  });
}

export async function reverseChargeback(db: Db, domain: DomainServices, chargebackId: string): Promise<string | null> {
  return db.transaction(async (tx) => {
    const chargeback = await lockTransactionById(tx, chargebackId);
    if (!chargeback || chargeback.type !== 'chargeback' || chargeback.data.status !== 'processed') return null;
    if (await hasLinkedTransfer(tx, chargeback.id, 'chargeback_reversal')) return null;
    const tenant: Tenant = { orgId: chargeback.org_id, environment: chargeback.environment };
    const reversal = await createDispute(networkContext(tx, domain, tenant), chargeback, Number(chargeback.data.amount), 'chargeback_reversal');
    return reversal.id;
  });
}
