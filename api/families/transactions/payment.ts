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
 * pipeline in rules.ts instead: `plan` answers null. Both check their parties, choose the
 * processing account and finish the row with the same rules' functions (`requireAccount`,
 * `chosenProcessing`, `requireMethod`, `finishCreate`): only how the parties are read differs.
 */
import type { Collection, CreateSteps, RuleContext, StoredObject } from '../../engine/family.ts';
import { decodeCreate, prepareNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { currentAuditSetting } from '../../db/auditContext.ts';
import type { EventDraft } from '../../db/events.ts';
import { statusOperation } from '../transaction_operations/operations.ts';
import { groupCommit, groupWriterOf } from '../../db/groupWriter.ts';
import { auditRows } from '../../db/auditStatement.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { creationEvents } from './lifecycle.ts';
import * as repo from './repository.ts';
import {
  chosenProcessing, finishCreate, hasInlineMethod, inlineMethodBody, namedMethodId, partiesFromInput, partyFields, requireAccount, requireMethod,
  requireNamedMethod, requireProcessing, timedJobs, typedNumber,
} from './rules.ts';

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

async function plan(ctx: RuleContext & { collection: Collection }, body: Json): Promise<PaymentPlan | null> {
  const row = decodeCreate(ctx, body);
  if (!isPlainPayment(ctx, row)) return null;
  const data: Json = { ...row.data };
  const given = partiesFromInput(ctx, row.type, data);
  const inline = hasInlineMethod(data);
  const methodId = inline ? given.methodId : namedMethodId(given, data);

  // 1. read: every party in one round trip
  const read = await repo.readPaymentParties(ctx.tx, ctx.tenant, {
    customerId: given.customerId,
    processingId: given.processingId,
    methodId: inline ? undefined : methodId,
    defaultProcessing: !given.processingId,
    payingMethodOf: !inline && !methodId ? given.customerId : undefined,
  });
  const fields = partyFields(ctx);
  const customer = given.customerId ? requireAccount(read.customer, 'customer', fields.customer) : undefined;
  if (given.processingId) requireAccount(read.processing, 'processing', fields.processing);
  ctx.knownAccounts = new Set([customer?.id, read.processing?.id].filter((id): id is string => !!id));

  // 2. decide: the method by its own family's rules, then the processor on the typed number
  let method: StoredObject | undefined;
  let number: string | undefined;
  let newMethod: StoredObject | undefined;
  const events: EventDraft[] = [];
  if (inline) {
    const prepared = await prepareNested(ctx, paymentMethods, inlineMethodBody(ctx, data.payment_method as Json, given.customerId, data.currency));
    method = newMethod = prepared.row;
    number = typedNumber(method, data.payment_method as Json);
    events.push(...prepared.events);
  } else if (methodId) {
    method = requireNamedMethod(ctx, read.method);
  } else {
    method = read.payingMethod;
  }
  method = requireMethod(ctx, method);
  const processingId = requireProcessing(chosenProcessing(given, customer, read.defaultProcessing?.id));
  const parties = { customerId: given.customerId, processingId, methodId: method.id };
  const transaction = await finishCreate(ctx, row, data, parties, method, { automatic: false, number, plan: [] });
  events.push(...creationEvents(transaction));
  const step = statusOperation(transaction, null);
  return { write: { method: newMethod, transaction, operations: step ? [step] : [], events, jobs: timedJobs(ctx, transaction) } };
}

// 3. write: one statement (shared with other payments arriving at the same time when it commits on its own)
async function write(ctx: RuleContext, planned: PaymentPlan): Promise<StoredObject> {
  const item: repo.PaymentItem = { tenant: ctx.tenant, write: planned.write, audit: currentAuditSetting() };
  // Payments that commit on their own and arrive together share one statement (group commit); its
  // rows are audited by the statement, each with its own actor (without that, one statement each).
  const grouped = groupCommit.enabled && !ctx.tx.inTransaction && auditRows.inStatement;
  const db = ctx.tx;
  const row = grouped
    ? await groupWriterOf(db, 'payments', (items: repo.PaymentItem[]) => repo.insertPayments(db, items)).write(item)
    : (await repo.insertPayments(db, [item]))[0];
  (ctx.createdNow ??= new Set()).add(row.id);
  return row;
}

export const paymentSteps: CreateSteps<PaymentPlan> = { plan, write };
