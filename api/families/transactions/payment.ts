/**
 * A payment as explicit steps, the hot path of the API (issue: "a card payment as explicit
 * steps"):
 *
 *   1. read   — the payer, the receiver (or the environment's default) and a saved method, in one
 *               round trip, outside any database transaction;
 *   2. decide — the inline method is checked and sealed by its own family's rules, and the
 *               processor decides from the number still held in memory (a real processor is
 *               called here, before anything is written);
 *   3. write  — the method, the transaction, its events and its timed jobs in one statement.
 *
 * A payment that needs more (a client token, a split, a payment link, invoice allocations, a
 * default method of the payer that must be found first is fine) goes through the generic
 * pipeline in rules.ts instead: `plan` answers null.
 */
import type { Collection, CreateSteps, RuleContext, StoredObject } from '../../engine/family.ts';
import { decodeCreate, prepareNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import type { EventDraft } from '../../db/events.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { creationEvents } from './lifecycle.ts';
import * as repo from './repository.ts';
import { decideStatus, hasInlineMethod, inlineMethodBody, methodFacts, partiesFromInput, storeParties, timedJobs, typedNumber, type Parties } from './rules.ts';

interface PaymentPlan {
  write: repo.PaymentWrite;
}

/** Stored fields that only the generic pipeline handles: links, splits, invoices, payment links. */
const NEEDS_PIPELINE = ['transfers', 'ledger', 'allocations', 'payment_link_id'];

/** Judged on the decoded row (stored names), so each version's spelling of a field counts. */
function isPlainPayment(ctx: RuleContext, row: StoredObject): boolean {
  if (ctx.principal.kind !== 'secret') return false;
  if (row.type !== 'payment' || row.data.status !== undefined) return false;
  if (NEEDS_PIPELINE.some((field) => row.data[field] !== undefined)) return false;
  const method = row.data.payment_method;
  // An inline method that sets account defaults runs that family's afterWrite: the pipeline does.
  return !(isPlainObject(method) && method.account_defaults !== undefined);
}

function requireAccount(found: StoredObject | undefined, field: string, processing: boolean): StoredObject {
  if (!found) throw invalidAttributes({ [field]: 'No account with this id' });
  if (processing && found.type !== 'processing') throw invalidAttributes({ [field]: 'Must be a processing account' });
  return found;
}

async function plan(ctx: RuleContext & { collection: Collection }, body: Json): Promise<PaymentPlan | null> {
  const row = decodeCreate(ctx, body);
  if (!isPlainPayment(ctx, row)) return null;
  const data: Json = { ...row.data };
  const given = partiesFromInput(ctx, row.type, data);
  const inline = hasInlineMethod(data);
  const methodId = given.methodId ?? (isPlainObject(data.payment_method) && !inline ? String(data.payment_method.id) : undefined);

  // 1. read: every party in one round trip
  const read = await repo.readPaymentParties(ctx.tx, ctx.tenant, {
    customerId: given.customerId,
    processingId: given.processingId,
    methodId: inline ? undefined : methodId,
    defaultProcessing: !given.processingId,
    payingMethodOf: !inline && !methodId ? given.customerId : undefined,
  });
  const v1 = ctx.version === 'v1';
  const customer = given.customerId ? requireAccount(read.customer, v1 ? 'customer_id' : 'sender[account_id]', false) : undefined;
  if (given.processingId) requireAccount(read.processing, v1 ? 'processing_id' : 'receiver[account_id]', true);
  ctx.knownAccounts = new Set([customer?.id, read.processing?.id].filter((id): id is string => !!id));

  // 2. decide: the method by its own family's rules, then the processor on the typed number
  let method: StoredObject | undefined;
  let number: string | undefined;
  let newMethod: StoredObject | undefined;
  const events: EventDraft[] = [];
  if (inline) {
    const prepared = await prepareNested(ctx, paymentMethods, inlineMethodBody(ctx, data.payment_method as Json, given.customerId));
    method = newMethod = prepared.row;
    number = typedNumber(method, data.payment_method as Json);
    events.push(...prepared.events);
  } else if (methodId) {
    method = read.method;
    if (!method) throw invalidAttributes({ [v1 ? 'payment_method_id' : 'method_id']: 'No payment method with this id' });
  } else {
    method = read.payingMethod;
  }
  if (!method) throw invalidAttributes({ [v1 ? 'payment_method' : 'sender']: 'A payment method is required' });
  const primary = customer?.data.primary_processing_id;
  const processingId = given.processingId ?? (typeof primary === 'string' ? primary : read.defaultProcessing?.id);
  if (!processingId) throw invalidAttributes({ processing_id: 'No processing account: name one or create one first' });
  if (typeof data.amount !== 'number') throw invalidAttributes({ amount: 'Required' });

  const parties: Parties = { customerId: given.customerId, processingId, methodId: method.id };
  storeParties(data, row.type, parties);
  Object.assign(data, decideStatus(ctx, { ...row, data }, method, false, number));
  Object.assign(data, methodFacts(ctx, method, number));
  if (data.funding_timing === undefined) data.funding_timing = 'standard';
  data.risk_flag = 'allowed';
  data.transfer_plan = [];
  const transaction = { ...row, data };
  events.push(...creationEvents(transaction));
  return { write: { method: newMethod, transaction, events, jobs: timedJobs(ctx, transaction) } };
}

// 3. write: one statement
async function write(ctx: RuleContext, planned: PaymentPlan): Promise<StoredObject> {
  const row = await repo.insertPayment(ctx.tx, ctx.tenant, planned.write);
  (ctx.createdNow ??= new Set()).add(row.id);
  return row;
}

export const paymentSteps: CreateSteps<PaymentPlan> = { plan, write };
