/**
 * Sandbox disputes (CONTRACT §14): a processed payment by a disputed sandbox card is charged back
 * about a second later (a `chargeback` transaction for what was not refunded, linked by
 * `assoc_transaction_id`), and with the reversing card the chargeback is reversed a second after
 * that. Both are paying transactions: funded with the next run (timing `rapid`), so a chargeback
 * is taken from the next deposit. Each runs under a lock on the transaction it disputes and checks
 * for an earlier one first, so a retried job never disputes twice.
 */
import type { Db } from '../../db/connection.ts';
import { recordEvents } from '../../db/events.ts';
import { insertObjects } from '../../db/objects.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import { newId } from '../../ids.ts';
import { systemCreationEvents } from '../transactions/lifecycle.ts';
import { insertTransfers, refundedAmount, scheduleJob } from '../transactions/repository.ts';
import { hasLinkedTransfer, lockTransactionById } from './chargebackRepository.ts';
import { recordFundingOperations } from './repository.ts';

/** A dispute transaction against `original`, moving its amount the other way, with both transfer rows. */
async function insertDispute(tx: Db, tenant: Tenant, original: StoredObject, type: 'chargeback' | 'chargeback_reversal'): Promise<StoredObject> {
  const o = original.data;
  const processing = { account_id: o.processing_id ?? null, method_id: null };
  const customer = { account_id: o.customer_id ?? null, method_id: o.payment_method_id ?? null };
  const toCustomer = type === 'chargeback';
  const data = {
    amount: o.amount, currency: o.currency ?? 'USD', status: 'processed', status_code: type,
    status_message: toCustomer ? 'Charged back by the card network' : 'Chargeback reversed by the card network',
    processing_id: o.processing_id ?? null, customer_id: o.customer_id ?? null, payment_method_id: o.payment_method_id ?? null,
    sender: toCustomer ? processing : customer, receiver: toCustomer ? customer : processing,
    payment_method: o.payment_method ?? null, payment_method_type: o.payment_method_type ?? null, card_brand: o.card_brand ?? null,
    funding_timing: 'rapid', trigger: 'automatic', attrs: {},
  };
  const [row] = await insertObjects(tx, 'transactions', tenant, [{ id: newId('txn'), type, data, created_at: new Date(), modified_at: new Date() }]);
  const amount = Number(o.amount);
  const entry = { account_id: (o.customer_id as string) ?? null, entry_type: type };
  await insertTransfers(tx, tenant, [
    { ...entry, id: newId('trf'), transaction_id: row.id, assoc_transaction_id: original.id, amount },
    { ...entry, id: newId('trf'), transaction_id: original.id, assoc_transaction_id: row.id, amount: toCustomer ? -amount : amount },
  ]);
  await recordEvents(tx, tenant, systemCreationEvents(row));
  return row;
}

/** Charges back a disputed payment; schedules the reversal when its card says so. */
export async function chargeBack(db: Db, paymentId: string, now: Date): Promise<string | null> {
  return db.transaction(async (tx) => {
    const payment = await lockTransactionById(tx, paymentId);
    if (!payment || payment.type !== 'payment' || payment.data.status !== 'processed') return null;
    if (await hasLinkedTransfer(tx, payment.id, 'chargeback')) return null;
    // The dispute is for what the cardholder was still out of: refunds already returned the rest.
    const disputed = Number(payment.data.amount) - (await refundedAmount(tx, payment.id));
    if (disputed <= 0) return null;
    const tenant: Tenant = { orgId: payment.org_id, environment: payment.environment };
    const chargeback = await insertDispute(tx, tenant, { ...payment, data: { ...payment.data, amount: disputed } }, 'chargeback');
    await recordFundingOperations(tx, tenant, [{ id: payment.id, amount: Number(payment.data.amount), steps: ['chargeback'] }]);
    if (payment.data.sandbox_chargeback === 'chargeback_reversal') {
      await scheduleJob(tx, 'sandbox_chargeback_reversal', { transaction_id: chargeback.id }, new Date(now.getTime() + 1000), `chargeback_reversal:${chargeback.id}`);
    }
    return chargeback.id;
  });
}

export async function reverseChargeback(db: Db, chargebackId: string): Promise<string | null> {
  return db.transaction(async (tx) => {
    const chargeback = await lockTransactionById(tx, chargebackId);
    if (!chargeback || chargeback.type !== 'chargeback' || chargeback.data.status !== 'processed') return null;
    if (await hasLinkedTransfer(tx, chargeback.id, 'chargeback_reversal')) return null;
    const reversal = await insertDispute(tx, { orgId: chargeback.org_id, environment: chargeback.environment }, chargeback, 'chargeback_reversal');
    return reversal.id;
  });
}
