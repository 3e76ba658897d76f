/**
 * Transaction rules, run inside the request's database transaction: resolving parties and
 * methods, the processor's decision, refund limits under a lock on the original, transfer splits,
 * status transitions, timed jobs and events.
 */
import type { EventDraft } from '../../db/events.ts';
import { statusOperation } from '../transaction_operations/operations.ts';
import { recordOperations } from '../transaction_operations/repository.ts';
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { createNestedAtWrite } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { formatTimestamp, MUST_BE_POSITIVE, parseMoney } from '../../schema/values.ts';
import { invalidAttributes, transactionDeclined } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { defaultProcessingAccount } from '../accounts/repository.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { isKept, NOT_KEPT } from '../payment_methods/statuses.ts';
import { applyPaymentLink } from '../payment_links/payments.ts';
import { applyClientIntent } from '../clientIntent.ts';
import { authorizeCard } from './decide.ts';
import { isRelease, releaseRules } from './releases.ts';
import { isReverseFlow, planReverseFlow } from './reverseFlow.ts';
import { returnFundedToHeld } from './funding.ts';
import { applyAllocations, loadAllocations, planAllocations, releaseAllocations } from './allocations.ts';
import { canMoveFunding, canTransition, creationEvents, FUNDING_STEP, isSystemMade, statusCodeFor, SYSTEM_TRANSITION, SYSTEM_TYPES, systemCreationEvents, transitionEvents } from './lifecycle.ts';
import * as repo from './repository.ts';

type Data = Json;

export interface Parties {
  customerId?: string;
  processingId?: string;
  methodId?: string;
}

/** Where each version names the customer, processing account and method, by type. */
export function partiesFromInput(ctx: RuleContext, type: string, data: Data): Parties {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  if (ctx.version === 'v1') {
    return { customerId: str(data.customer_id), processingId: str(data.processing_id), methodId: str(data.payment_method_id) };
  }
  const sender = isPlainObject(data.sender) ? data.sender : {};
  const receiver = isPlainObject(data.receiver) ? data.receiver : {};
  const processingId = str(data.processing_id);
  switch (type) {
    case 'payment':
      return { customerId: str(sender.account_id), methodId: str(sender.method_id), processingId: str(receiver.account_id) ?? processingId };
    case 'deposit':
      return { methodId: str(receiver.method_id) ?? str(sender.method_id), processingId: str(receiver.account_id) ?? processingId };
    case 'withdraw':
      return { processingId: str(sender.account_id) ?? processingId, methodId: str(receiver.method_id) };
    default: // payout, refund: from the processing account to the customer's method
      return { processingId: str(sender.account_id) ?? processingId, customerId: str(receiver.account_id), methodId: str(receiver.method_id) };
  }
}

/** Writes both representations: v1 ids and v2 sender/receiver. */
export function storeParties(data: Data, type: string, parties: Parties): void {
  data.customer_id = parties.customerId ?? null;
  data.processing_id = parties.processingId ?? null;
  data.payment_method_id = parties.methodId ?? null;
  const customerSide = { account_id: parties.customerId ?? null, method_id: parties.methodId ?? null };
  const processingSide = { account_id: parties.processingId ?? null, method_id: null };
  if (type === 'deposit') {
    // The processing account's money goes to its funding method (CONTRACT §14): the method receives.
    data.sender = { account_id: parties.processingId ?? null, method_id: null };
    data.receiver = { account_id: parties.processingId ?? null, method_id: parties.methodId ?? null };
    return;
  }
  const inbound = type === 'payment' || type === 'chargeback_reversal';
  data.sender = inbound ? customerSide : processingSide;
  data.receiver = inbound ? processingSide : customerSide;
}

/**
 * The inline method's body as its own family takes it: the payer as its account, `type` explicit,
 * and a bank account that names no currency in the payment's.
 */
export function inlineMethodBody(ctx: RuleContext, input: Json, payerId: string | undefined, currency: unknown): Json {
  const type = typeof input.type === 'string' ? input.type : isPlainObject(input.bank_account) ? 'bank_account' : 'card';
  if (!paymentMethods.types.includes(type)) throw invalidAttributes({ payment_method: { type: 'Must be card or bank_account' } });
  const body: Json = { ...input, type };
  if (payerId && body.account_id === undefined && body.customer_id === undefined) body[ctx.version === 'v1' ? 'customer_id' : 'account_id'] = payerId;
  const bank = body.bank_account;
  if (type === 'bank_account' && isPlainObject(bank) && bank.currency === undefined && bank.account_currency === undefined && typeof currency === 'string') {
    body.bank_account = { ...bank, currency };
  }
  return body;
}

/** The digits the payer typed, held for the processor so the sealed copy need not be opened again. */
export function typedNumber(method: StoredObject, input: Json): string {
  const section = (isPlainObject(input[method.type]) ? input[method.type] : {}) as Json;
  return String((method.type === 'card' ? section.card_number : section.account_number) ?? '').replace(/[\s-]/g, '');
}

/**
 * A method typed into the payment, created through its own family's pipeline (rules, afterWrite,
 * events): planned now, written with the payment once the processor has answered its card.
 */
async function createInlineMethod(ctx: RuleContext, input: Json, accountId: string | undefined, currency: unknown): Promise<Resolved> {
  const method = await createNestedAtWrite(ctx, paymentMethods, inlineMethodBody(ctx, input, accountId, currency));
  return { method, number: typedNumber(method, input) };
}

interface Resolved {
  method: StoredObject | null;
  /** the plain number, when the payer just typed it */
  number?: string;
}

export function snapshot(method: StoredObject): Json {
  const section = (name: string) => (isPlainObject(method.data[name]) ? (method.data[name] as Json) : {});
  if (method.type === 'card') {
    const card = section('card');
    return { object: 'payment_method', id: method.id, type: 'card', card: { card_number: card.card_number, card_brand: card.card_brand, expiry: card.expiry } };
  }
  const bank = section('bank_account');
  return { object: 'payment_method', id: method.id, type: 'bank_account', bank_account: { account_number: bank.account_number, routing_number: bank.routing_number, account_type: bank.account_type } };
}

/** A stored method's account or card number, opened from the vault for the processor. */
function plainNumber(ctx: RuleContext, method: StoredObject): string {
  const section = (method.type === 'card' ? method.data.card : method.data.bank_account) as Json;
  return ctx.domain.vault.decrypt(String(section.sealed_number));
}

/** What a new transaction records of its method, and the sandbox bank's verdict on a debit. */
export function methodFacts(ctx: RuleContext, method: StoredObject, number?: string): Json {
  const facts: Json = {
    payment_method: snapshot(method),
    payment_method_type: method.type,
    card_brand: method.type === 'card' ? (method.data.card as Json).card_brand : null,
  };
  if (method.type === 'bank_account' && ctx.domain.processor.bankWillReject(number ?? plainNumber(ctx, method))) facts.sandbox_bank_reject = true;
  return facts;
}

/** An inline method (a body, not just `{id}`) is created with the payment. */
export function hasInlineMethod(data: Data): boolean {
  return isPlainObject(data.payment_method) && !('id' in data.payment_method && Object.keys(data.payment_method).length === 1);
}

/** Where the client's version names a transaction's parties, for the errors about them. */
export function partyFields(ctx: RuleContext): { customer: string; processing: string; methodId: string; method: string } {
  const v1 = ctx.version === 'v1';
  return {
    customer: v1 ? 'customer_id' : 'sender[account_id]',
    processing: v1 ? 'processing_id' : 'receiver[account_id]',
    methodId: v1 ? 'payment_method_id' : 'method_id',
    method: v1 ? 'payment_method' : 'sender',
  };
}

/** The stored method a transaction names by id (v1 `payment_method_id`, v2 `method_id`, or `payment_method: {id}`). */
export function namedMethodId(parties: Parties, data: Data): string | undefined {
  return parties.methodId ?? (isPlainObject(data.payment_method) ? String(data.payment_method.id) : undefined);
}

/** A named method, found: it must exist in the tenant and have been kept for later payments. */
export function requireNamedMethod(ctx: RuleContext, found: StoredObject | null | undefined): StoredObject {
  if (!found) throw invalidAttributes({ [partyFields(ctx).methodId]: 'No payment method with this id' });
  if (!isKept(found.data)) throw invalidAttributes({ [partyFields(ctx).methodId]: NOT_KEPT });
  return found;
}

/** A transaction needs a method: named, typed in, or the payer's default. */
export function requireMethod(ctx: RuleContext, method: StoredObject | null | undefined): StoredObject {
  if (!method) throw invalidAttributes({ [partyFields(ctx).method]: 'A payment method is required' });
  return method;
}

async function resolveMethod(ctx: RuleContext, type: string, data: Data, parties: Parties): Promise<Resolved> {
  if (hasInlineMethod(data)) return createInlineMethod(ctx, data.payment_method as Json, parties.customerId, data.currency);
  const methodId = namedMethodId(parties, data);
  if (methodId) return { method: requireNamedMethod(ctx, await repo.findMethod(ctx.tx, ctx.tenant, methodId)) };
  if (type === 'payment' && parties.customerId) return { method: await repo.defaultPayingMethod(ctx.tx, ctx.tenant, parties.customerId) };
  return { method: null };
}

/** An account a transaction names, found: it must exist, and a receiver must be a processing account. */
export function requireAccount(found: StoredObject | null | undefined, kind: 'customer' | 'processing', field: string): StoredObject {
  if (!found) throw invalidAttributes({ [field]: 'No account with this id' });
  if (kind === 'processing' && found.type !== 'processing') throw invalidAttributes({ [field]: 'Must be a processing account' });
  return found;
}

async function checkAccount(ctx: RuleContext, id: string | undefined, kind: 'customer' | 'processing', field: string): Promise<StoredObject | null> {
  if (!id) return null;
  return requireAccount(await repo.findAccount(ctx.tx, ctx.tenant, id), kind, field);
}

/** The receiver of a payment that names none: the payer's primary processing account, else `environmentDefault`. */
export function chosenProcessing(parties: Parties, customer: StoredObject | null | undefined, environmentDefault?: string): string | undefined {
  if (parties.processingId) return parties.processingId;
  const primary = customer?.data.primary_processing_id;
  return typeof primary === 'string' ? primary : environmentDefault;
}

/** A transaction is made for a processing account, named or chosen. */
export function requireProcessing(id: string | undefined): string {
  if (!id) throw invalidAttributes({ processing_id: 'No processing account: name one or create one first' });
  return id;
}

async function resolveProcessing(ctx: RuleContext, parties: Parties, customer: StoredObject | null): Promise<string | undefined> {
  return chosenProcessing(parties, customer) ?? (await defaultProcessingAccount(ctx.tx, ctx.tenant))?.id;
}

interface Link {
  assoc_transaction_id: string;
  amount?: number;
}

function linksFromInput(ctx: RuleContext, data: Data): Link[] {
  const list = ctx.version === 'v1' ? data.ledger : data.transfers;
  if (!Array.isArray(list)) return [];
  return (list as Json[]).filter((item) => item.assoc_transaction_id !== undefined).map((item, i) => {
    const field = ctx.version === 'v1' ? 'ledger' : 'transfers';
    if (typeof item.assoc_transaction_id !== 'string') throw invalidAttributes({ [field]: { [i]: { assoc_transaction_id: 'Must be a transaction id' } } });
    if (item.amount === undefined) return { assoc_transaction_id: item.assoc_transaction_id };
    const amount = parseMoney(item.amount);
    if (!amount.ok) throw invalidAttributes({ [field]: { [i]: { amount: amount.reason } } });
    return { assoc_transaction_id: item.assoc_transaction_id, amount: amount.value as number };
  });
}

/** Locks each original once, in id order (so two requests naming the same payments cannot deadlock). */
async function lockOriginals(ctx: RuleContext, links: Link[]): Promise<Map<string, StoredObject>> {
  const originals = new Map<string, StoredObject>();
  for (const id of [...new Set(links.map((l) => l.assoc_transaction_id))].sort()) {
    const found = await repo.lockTransaction(ctx.tx, ctx.tenant, id);
    if (!found) throw invalidAttributes({ assoc_transaction_id: 'No transaction with this id' });
    if (found.type !== 'payment' || found.data.status !== 'processed') {
      throw invalidAttributes({ assoc_transaction_id: `Only a processed payment can be refunded (this one is ${String(found.data.status)})` });
    }
    originals.set(id, found);
  }
  return originals;
}

/**
 * A linked refund: each original is locked, so concurrent refunds of one payment run one at a
 * time and each sees the others' committed totals. Within one request, every refund already
 * planned (earlier links, earlier bulk items) counts too. Never more than the processed amount.
 */
async function planRefund(ctx: RuleContext, data: Data, links: Link[]): Promise<{ plan: Json[]; original: StoredObject }> {
  const originals = await lockOriginals(ctx, links);
  const planned = (ctx.plannedRefunds ??= new Map());
  const mine = new Map<string, number>();
  const plan: Json[] = [];
  let total = 0;
  for (const link of links) {
    const found = originals.get(link.assoc_transaction_id)!;
    const alreadyPlanned = (planned.get(found.id) ?? 0) + (mine.get(found.id) ?? 0);
    const refundable = Number(found.data.amount) - (await repo.refundedAmount(ctx.tx, found.id)) - alreadyPlanned;
    const amount = link.amount ?? (links.length === 1 && typeof data.amount === 'number' ? data.amount : refundable);
    if (amount <= 0 || amount > refundable) {
      throw invalidAttributes({ amount: `Refunds of ${found.id} may total at most its processed amount; ${(Math.max(refundable, 0) / 100).toFixed(2)} remains` });
    }
    total += amount;
    mine.set(found.id, (mine.get(found.id) ?? 0) + amount);
    // The original's ledger shows the refund too, as money going back out (`mirror`).
    plan.push({ id: newId('trf'), entry_type: 'refund', assoc_transaction_id: found.id, amount, mirror: -amount, account_id: found.data.customer_id ?? null });
  }
  if (typeof data.amount === 'number' && data.amount !== total) throw invalidAttributes({ amount: 'Must equal the sum of the linked amounts' });
  // Only a refund that passed every check holds back money for the request's later items.
  for (const [id, amount] of mine) planned.set(id, (planned.get(id) ?? 0) + amount);
  data.amount = total;
  return { plan, original: originals.get(links[0].assoc_transaction_id)! };
}

async function planSplit(ctx: RuleContext, data: Data): Promise<Json[]> {
  if (!Array.isArray(data.transfers)) return [];
  const plan: Json[] = [];
  let total = 0;
  for (const [i, item] of (data.transfers as Json[]).entries()) {
    const receiver = isPlainObject(item.receiver) ? item.receiver.account_id : item.account_id;
    const amount = parseMoney(item.amount);
    if (!amount.ok) throw invalidAttributes({ transfers: { [i]: { amount: amount.reason } } });
    if (typeof receiver !== 'string') throw invalidAttributes({ transfers: { [i]: { receiver: { account_id: 'Required' } } } });
    await checkAccount(ctx, receiver, 'processing', `transfers[${i}][receiver][account_id]`);
    total += amount.value as number;
    plan.push({ id: newId('trf'), entry_type: 'transfer', account_id: receiver, amount: amount.value, assoc_transaction_id: null });
  }
  if (total > Number(data.amount)) throw invalidAttributes({ transfers: 'The transfers add up to more than the amount' });
  return plan;
}

/**
 * The processor's answer for a new transaction. `number` is the method's plain number when the
 * caller holds it (an inline method just typed in); a stored method's sealed number is opened.
 */
export async function decideStatus(ctx: RuleContext, row: StoredObject, method: StoredObject | null, automatic: boolean, number?: string): Promise<Json> {
  const requested = row.data.status;
  if (requested !== undefined && requested !== null && requested !== 'authorized') {
    throw invalidAttributes({ status: 'Only authorized may be requested when creating a transaction' });
  }
  let dispute: Json = {};
  if (row.type === 'payment' && method?.type === 'card') {
    const outcome = await authorizeCard(ctx, number ?? plainNumber(ctx, method));
    if (!outcome.approved) return { status: 'declined', status_code: outcome.statusCode, status_message: outcome.message };
    if (outcome.dispute) dispute = { sandbox_chargeback: outcome.dispute };
  }
  const authorizeOnly = row.type === 'payment'
    && (requested === 'authorized' || automatic || (ctx.version === 'v1' && ctx.principal.kind === 'secret' && ctx.principal.settings.authorize_and_capture === true));
  if (authorizeOnly) return { status: 'authorized', status_code: 'approved', status_message: 'Authorized', authorization_mode: automatic ? 'automatic' : 'manual', ...dispute };
  // The sandbox processor answers at once, so the create's own answer is the outcome in both
  // versions; `processing` is left for a processor that has not answered yet.
  return { status: 'processed', status_code: 'approved', status_message: 'Approved', ...dispute };
}

/**
 * A transaction the service makes on its own (systemMade.ts): its typed input names its parties,
 * status and transfer rows; both versions' party fields are stored as for any transaction.
 */
function finishSystemCreate(row: StoredObject): StoredObject {
  const data: Data = { ...row.data };
  const id = (value: unknown) => (typeof value === 'string' ? value : undefined);
  storeParties(data, row.type, { customerId: id(data.customer_id), processingId: id(data.processing_id), methodId: id(data.payment_method_id) });
  return { ...row, data };
}

/** What a new transaction's decide steps have settled so far; each step reads it and adds to it. */
interface Draft {
  type: string;
  data: Data;
  parties: Parties;
  method: StoredObject | null;
  /** the method's plain number, when the request typed it in */
  number?: string;
  plan: Json[];
  automatic: boolean;
  /** a reverse-flow payment's cards were each decided for their part */
  partsCharged: boolean;
  /** the step that found the parties; the later party steps pass */
  partiesBy: 'refund' | 'reverse flow' | 'parties' | null;
}

interface DecideStep {
  name: string;
  run: (ctx: RuleContext, draft: Draft) => Promise<void>;
}

/** A linked refund takes its parties and method from the original payment, locked. */
async function refundStep(ctx: RuleContext, draft: Draft): Promise<void> {
  const links = draft.type === 'refund' ? linksFromInput(ctx, draft.data) : [];
  if (!links.length) return;
  const refund = await planRefund(ctx, draft.data, links);
  const o = refund.original.data;
  draft.plan = refund.plan;
  draft.parties = { customerId: o.customer_id as string, processingId: o.processing_id as string, methodId: o.payment_method_id as string };
  draft.method = draft.parties.methodId ? await repo.findMethod(ctx.tx, ctx.tenant, draft.parties.methodId) : null;
  draft.partiesBy = 'refund';
}

/** A payment gathered from several senders: each part is charged as it is planned. */
async function reverseFlowStep(ctx: RuleContext, draft: Draft): Promise<void> {
  if (draft.partiesBy || !isReverseFlow(ctx, draft.type, draft.data)) return;
  const gathered = await planReverseFlow(ctx, draft.data);
  const given = partiesFromInput(ctx, draft.type, draft.data);
  await checkAccount(ctx, given.processingId, 'processing', 'receiver[account_id]');
  const processingId = await resolveProcessing(ctx, given, null);
  if (!processingId) throw invalidAttributes({ receiver: { account_id: 'Required' } });
  Object.assign(draft, { plan: gathered.plan, method: gathered.method, partsCharged: true, partiesBy: 'reverse flow' });
  draft.parties = { customerId: gathered.customerId, methodId: gathered.method.id, processingId };
}

/** Every other transaction: the parties the request names (or their defaults), checked. */
async function partiesStep(ctx: RuleContext, draft: Draft): Promise<void> {
  if (draft.partiesBy) return;
  const given = partiesFromInput(ctx, draft.type, draft.data);
  const fields = partyFields(ctx);
  const customer = await checkAccount(ctx, given.customerId, 'customer', fields.customer);
  await checkAccount(ctx, given.processingId, 'processing', fields.processing);
  let { method, number } = await resolveMethod(ctx, draft.type, draft.data, given);
  if (!method && isRelease(draft.type)) method = await releaseRules().defaultFundingMethod(ctx, given.processingId);
  method = requireMethod(ctx, method);
  const processingId = requireProcessing(await resolveProcessing(ctx, given, customer));
  Object.assign(draft, { method, number, partiesBy: 'parties' });
  draft.parties = { ...given, methodId: method.id, processingId };
}

/**
 * How the transactions family decides a new transaction, in order (the create service's decide
 * step for this family; the processor is asked in `finishCreate`, after all of them). A client
 * token's presets and a payment link fill the input first; invoice allocations complete it; then
 * exactly one of refund, reverse flow and parties finds who pays whom; a plain payment may be
 * split, and a release is checked against the funds it moves.
 */
export const DECIDE_STEPS: readonly DecideStep[] = [
  { name: 'client token', run: async (ctx, draft) => { draft.automatic = (await applyClientIntent(ctx, draft.type, draft.data)).automatic; } },
  { name: 'payment link', run: (ctx, draft) => applyPaymentLink(ctx, draft.type, draft.data) },
  { name: 'allocations', run: (ctx, draft) => planAllocations(ctx, draft.type, draft.data) },
  { name: 'refund', run: refundStep },
  { name: 'reverse flow', run: reverseFlowStep },
  { name: 'parties', run: partiesStep },
  {
    name: 'split',
    run: async (ctx, draft) => {
      if (draft.partiesBy === 'parties' && draft.type === 'payment') draft.plan = await planSplit(ctx, draft.data);
    },
  },
  {
    name: 'release',
    run: async (ctx, draft) => {
      if (draft.partiesBy === 'parties' && isRelease(draft.type)) await releaseRules().planRelease(ctx, draft.type, draft.data, draft.parties.processingId!, draft.method!);
    },
  },
];

async function prepareCreate(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  if (isSystemMade(row)) return finishSystemCreate(row);
  if (SYSTEM_TYPES.includes(row.type)) throw invalidAttributes({ type: 'Chargebacks come from the card network; they cannot be created' });
  const draft: Draft = { type: row.type, data: { ...row.data }, parties: {}, method: null, plan: [], automatic: false, partsCharged: false, partiesBy: null };
  for (const step of DECIDE_STEPS) await step.run(ctx, draft);
  return finishCreate(ctx, row, draft.data, draft.parties, draft.method, draft);
}

/**
 * A payment of zero with a card typed in and `keep_active: true` said outright verifies the card:
 * the processor is asked as for any card payment, and an approval stores the card and processes the
 * payment with nothing to fund (no fee, no ledger legs: the funding trigger skips a zero amount).
 * Nothing is held for capture. Any other zero (a card not asked to be kept, a bank account, a
 * stored method) is no payment.
 */
function isCardVerification(type: string, data: Data, method: StoredObject | null): boolean {
  const typed = isPlainObject(data.payment_method) ? data.payment_method : {};
  const keepAsked = typed.keep_active === true || typed.keep_active === 'true' || typed.keep_active === '1';
  return type === 'payment' && method?.type === 'card' && keepAsked && isKept(method.data) && data.status !== 'authorized';
}

/**
 * The last step of every new transaction, whichever way its parties were found: the amount
 * required, both versions' party fields stored, the processor's decision, what the row records of
 * its method, and its transfer plan.
 */
export async function finishCreate(ctx: RuleContext, row: StoredObject, data: Data, parties: Parties, method: StoredObject | null,
  decided: { automatic: boolean; number?: string; plan: Json[]; partsCharged?: boolean }): Promise<StoredObject> {
  if (typeof data.amount !== 'number') throw invalidAttributes({ amount: 'Required' });
  if (data.amount === 0 && !isCardVerification(row.type, data, method)) throw invalidAttributes({ amount: MUST_BE_POSITIVE });
  storeParties(data, row.type, parties);
  // A reverse-flow payment's cards were each decided for their part: the whole is not asked again.
  Object.assign(data, await decideStatus(ctx, { ...row, data }, decided.partsCharged ? null : method, decided.automatic, decided.number));
  if (method) Object.assign(data, methodFacts(ctx, method, decided.number));
  if (row.type === 'payment' && data.funding_timing === undefined) data.funding_timing = 'standard';
  if (row.type === 'payment') data.risk_flag = 'allowed';
  // The 0 the conv_fee trigger stores for every writer (a payer's fee replaces it in the funding
  // trigger), sent here so that Postgres skips the trigger's call for each row the API creates.
  if (data.conv_fee_payer !== true) data.conv_fee = 0;
  delete data.ledger;
  delete data.transfers;
  data.transfer_plan = decided.plan;
  return { ...row, data };
}

const MUTABLE = new Set(['status', 'status_code', 'status_message', 'description', 'order_number', 'attrs']);

/**
 * A status change the service makes on its own (completion, bank rejection, authorization
 * expiry): its caller re-checked the status under the row's lock, and the refusals of a client's
 * change (funding cleared, refunds taken, a funding transfer) are not the bank's or the clock's to
 * obey. The status and its code are all it changes; the operation and events follow as for any change.
 */
function prepareSystemTransition(next: StoredObject, previous: StoredObject): StoredObject {
  const { [SYSTEM_TRANSITION]: reason, ...data } = next.data;
  const from = String(previous.data.status);
  const to = String(data.status);
  if (!canTransition(from, to)) throw new Error(`The service cannot change ${previous.id} from ${from} to ${to}`);
  return { ...next, data: { ...data, ...statusCodeFor(to, typeof reason === 'string' ? reason : undefined) } };
}

/**
 * A funding step the service takes (funding.ts): its funding_status is all it changes, and only
 * along the moves the funding run, a release and a refused deposit make.
 */
function prepareFundingStep(next: StoredObject, previous: StoredObject): StoredObject {
  const { [FUNDING_STEP]: _step, ...data } = next.data;
  if (!canMoveFunding(previous.data.funding_status, data.funding_status)) {
    throw new Error(`The service cannot move ${previous.id}'s funding from ${previous.data.funding_status} to ${data.funding_status}`);
  }
  return { ...next, data };
}

async function prepareUpdate(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<StoredObject> {
  if (SYSTEM_TRANSITION in next.data) return prepareSystemTransition(next, previous);
  if (FUNDING_STEP in next.data) return prepareFundingStep(next, previous);
  for (const key of new Set([...Object.keys(next.data), ...Object.keys(previous.data)])) {
    if (!MUTABLE.has(key) && JSON.stringify(next.data[key]) !== JSON.stringify(previous.data[key])) {
      throw invalidAttributes({ [key]: 'Cannot be changed after the transaction is created' });
    }
  }
  const from = String(previous.data.status);
  const to = String(next.data.status);
  if (from === to) return next;
  if (!canTransition(from, to)) throw invalidAttributes({ status: `Cannot change status from ${from} to ${to}` });
  if (SYSTEM_TYPES.includes(previous.type) || isRelease(previous.type)) throw invalidAttributes({ status: 'Funding transfers and chargebacks cannot change status' });
  if (previous.data.funding_status === 'funded' || previous.data.funding_status === 'held') {
    throw invalidAttributes({ status: 'Already cleared for funding; refund it instead' });
  }
  if ((to === 'voided' || to === 'rejected') && (await repo.refundedAmount(ctx.tx, previous.id)) > 0) {
    throw invalidAttributes({ status: `A payment with refunds or a chargeback cannot be ${to}; refund the rest instead` });
  }
  return { ...next, data: { ...next.data, ...statusCodeFor(to) } };
}

/** A deposit the bank refuses (or that is voided) once it was under way: what it paid out is held again. */
function isRefusedDeposit(next: StoredObject, previous: StoredObject): boolean {
  return next.type === 'deposit' && ['processing', 'processed'].includes(String(previous.data.status)) && ['rejected', 'voided'].includes(String(next.data.status));
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  const data = next.data;
  const step = statusOperation(next, previous);
  if (step) await recordOperations(ctx.tx, ctx.tenant, [step]);
  if (previous) {
    if (previous.data.status === 'authorized' && data.status !== 'authorized') await repo.removeJob(ctx.tx, `expire_auth:${next.id}`);
    await releaseAllocations(ctx, next, previous);
    if (isRefusedDeposit(next, previous)) await returnFundedToHeld(ctx, next.id);
    return;
  }
  await applyAllocations(ctx, next);
  // A funding run posts its own deposits' ledger legs; a requested release posts here.
  if (isRelease(next.type) && !isSystemMade(next)) await releaseRules().postRelease(ctx, next);
  const plan = (Array.isArray(data.transfer_plan) ? data.transfer_plan : []) as Json[];
  await repo.insertTransfers(ctx.tx, ctx.tenant, plan.flatMap((entry): repo.TransferRow[] => {
    const own = { id: String(entry.id), transaction_id: next.id, account_id: (entry.account_id as string) ?? null, assoc_transaction_id: (entry.assoc_transaction_id as string) ?? null, entry_type: String(entry.entry_type), amount: Number(entry.amount) };
    if (typeof entry.mirror !== 'number') return [own];
    // The associated transaction's ledger shows the entry too (a refund: money going back out).
    return [own, { ...own, id: newId('trf'), transaction_id: own.assoc_transaction_id!, assoc_transaction_id: next.id, amount: entry.mirror }];
  }));
  for (const job of timedJobs(ctx, next)) await repo.scheduleJob(ctx.tx, job.task, job.payload, job.runAt, job.key);
}

/** The worker's later steps a new transaction needs: completing processing, expiring an authorization, the sandbox bank's refusal. */
export function timedJobs(ctx: RuleContext, next: StoredObject): repo.JobDraft[] {
  const data = next.data;
  const now = ctx.domain.now().getTime();
  const payload = { transaction_id: next.id };
  const jobs: repo.JobDraft[] = [];
  if (data.status === 'processing') jobs.push({ task: 'complete_processing', payload, runAt: new Date(now + ctx.domain.processingDelayMs) });
  if (data.status === 'authorized' && data.authorization_mode === 'automatic') {
    const deadline = new Date(new Date(next.created_at).getTime() + ctx.domain.authorizationWindowMs);
    jobs.push({ task: 'expire_authorization', payload, runAt: deadline, key: `expire_auth:${next.id}` });
  }
  if (data.sandbox_bank_reject && (data.status === 'processed' || data.status === 'processing')) {
    jobs.push({ task: 'bank_reject', payload, runAt: new Date(now + 1000 + ctx.domain.processingDelayMs) });
  }
  return jobs;
}

function events(_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] {
  if (!next) return [];
  if (previous) return transitionEvents(next, previous);
  return isSystemMade(next) ? systemCreationEvents(next) : creationEvents(next);
}

/** v1 `ledger` (when asked for) and v2 `transfers` come from the transfers table. */
async function load(ctx: RuleContext, rows: StoredObject[], include: Set<string>): Promise<void> {
  await loadAllocations(ctx, rows, include);
  const wanted = ctx.version === 'v2' || include.has('ledger') || rows.some((r) => r.type === 'refund');
  if (!wanted || rows.length === 0) return;
  // A row this request just made with no transfers has none yet (v1's ledger shows times: read it).
  const unread = rows.filter((r) => !(ctx.version === 'v2' && ctx.createdNow?.has(r.id) && Array.isArray(r.data.transfer_plan) && r.data.transfer_plan.length === 0));
  const entries = unread.length ? await repo.transfersOf(ctx.tx, unread.map((r) => r.id)) : [];
  for (const row of rows) {
    const own = entries.filter((e) => e.transaction_id === row.id);
    row.data = { ...row.data };
    const ledger = () => own.map((e) => ({ object: 'transaction_ledger', id: e.id, entry_type: e.entry_type, amount: e.amount / 100, assoc_transaction_id: e.assoc_transaction_id, account_id: e.account_id, created_at: formatTimestamp(e.created_at) }));
    if (ctx.version === 'v1') {
      row.data.ledger = ledger();
    } else {
      row.data.transfers = own.map((e) => ({ object: 'transfer', id: e.id, type: e.entry_type, account_id: e.account_id, amount: Math.abs(e.amount) / 100, transaction_id: e.transaction_id, assoc_transaction_id: e.assoc_transaction_id }));
      if (row.type === 'refund') row.data.ledger = ledger();
    }
  }
}

async function beforeDelete(): Promise<void> {
  throw invalidAttributes({ id: 'Transactions cannot be deleted; void or refund them instead' });
}

/** A declined payment is stored (and evented) like any other, and answered as the decline. */
function answerAsError(created: StoredObject): ((rendered: Json) => Error) | undefined {
  return created.data.status === 'declined' ? transactionDeclined : undefined;
}

export const transactionRules: FamilyRules = {
  answerAsError,
  prepare: (ctx, next, previous) => (previous ? prepareUpdate(ctx, next, previous) : prepareCreate(ctx, next)),
  afterWrite,
  events,
  load,
  beforeDelete,
};
