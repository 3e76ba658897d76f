/**
 * A payment's plan on the pool, the hot path of the API, run by the create door
 * (api/engine/operations.ts: createObjects):
 *
 *   1. read   — the payer, the receiver (or the environment's default) and a saved method, in one
 *               round trip, outside any database transaction;
 *   2. decide — the inline method is checked and sealed by its own family's rules, and the
 *               processor decides from the number still held in memory (a real processor is
 *               called here, before anything is written);
 *   3. write  — the method, the transaction, its operation, its events and its timed jobs in one
 *               statement, which the door shares with payments arriving at the same time.
 *
 * A payment that needs more (a client token, a split, a payment link, invoice allocations) the
 * door runs through the family's rules in one transaction instead: `plan` answers null. Both check
 * their parties, choose the processing account and finish the row with the same rules' functions
 * (`requireAccount`, `chosenProcessing`, `requireMethod`, `finishCreate`): only how the parties are
 * read differs.
 */
import type { Db } from '../../db/connection.ts';
import { groupCommit, groupWriterOf } from '../../db/groupWriter.ts';
import type { Collection, CreateSteps, PlannedItem, RuleContext, StoredObject } from '../../engine/family.ts';
import { planNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import type { EventDraft } from '../../db/events.ts';
import { statusOperation } from '../transaction_operations/operations.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { expectedFunding } from './expectedFunding.ts';
import { creationEvents } from './lifecycle.ts';
import * as repo from './repository.ts';
import {
  chosenProcessing, finishCreate, hasInlineMethod, inlineMethodBody, namedMethodId, partiesFromInput, partyFields, requireAccount, requireMethod,
  requireNamedMethod, requireProcessing, timedJobs, typedNumber,
} from './rules.ts';

/** Stored fields whose rules write in a transaction: links, splits, invoices, payment links. */
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

async function plan(ctx: RuleContext & { collection: Collection }, row: StoredObject): Promise<repo.PaymentWrite | null> {
  if (!isPlainPayment(ctx, row)) return null;
  const data: Json = { ...row.data };
  const given = partiesFromInput(ctx, row.type, data);
  const inline = hasInlineMethod(data);
  const methodId = inline ? given.methodId : namedMethodId(given, data);

  // 1. read: every party in one round trip
  const read = await readParties(ctx.tx, {
    tenant: ctx.tenant,
    wanted: {
      customerId: given.customerId,
      processingId: given.processingId,
      methodId: inline ? undefined : methodId,
      defaultProcessing: !given.processingId,
      payingMethodOf: !inline && !methodId ? given.customerId : undefined,
    },
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
    const prepared = await planNested(ctx, paymentMethods, inlineMethodBody(ctx, data.payment_method as Json, given.customerId, data.currency));
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
  const account = [read.processing, read.defaultProcessing].find((party) => party?.id === processingId);
  // The statement dates its funding by the database's clock, which the domain's seam does not move.
  const funding = expectedFunding(transaction, account?.data, new Date());
  return { method: newMethod, transaction, funding, operations: step ? [step] : [], events, jobs: timedJobs(ctx, transaction) };
}

/**
 * A plan reads on the pool: payments whose reads arrive while one is running read together in one
 * statement, as their writes do (api/db/groupWriter.ts), so under load the round trip is paid once
 * per group; a lone read goes at once.
 */
function readParties(db: Db, asked: repo.PartiesAsked): Promise<repo.PaymentParties> {
  if (!groupCommit.enabled || db.inTransaction) return repo.readPaymentParties(db, asked.tenant, asked.wanted);
  return groupWriterOf(db, 'read:payment-parties', (asks: repo.PartiesAsked[]) => repo.readManyPaymentParties(db, asks)).write(asked);
}

// 3. write: one statement, for one payment or a group of them (the door groups payments that commit on their own)
function statement(db: Db, items: Array<PlannedItem<repo.PaymentWrite>>): Promise<StoredObject[]> {
  return repo.insertPayments(db, items.map((item) => ({ tenant: item.tenant, write: item.plan, audit: item.audit })));
}

export const paymentSteps: CreateSteps<repo.PaymentWrite> = { plan, statement };
