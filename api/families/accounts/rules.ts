/** Account rules that span fields or rows: processing references, status events. */
import { showBalances } from '../funding/balance.ts';
import { statusEvent, type EventDraft } from '../../db/events.ts';
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { createNested, rulesOnPool } from '../../engine/operations.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { markPayingDefault } from './payingDefault.ts';
import { findProcessingAccount, hasDependentCustomers, ownsMethod } from './repository.ts';
import { reopenOnNewEntity, resolveInlineEntity, showEntities, validateEntityReference, verifyAttachedEntity } from './entityLink.ts';
import { applySettingsTemplate, showSettingsIds } from './settingsLink.ts';
import { PROCESSING_STATUS_TRIGGER } from './triggers.ts';

/**
 * v1 `default_payment_method` and v2 `account_defaults.paying` are one rule: setting either goes
 * through the paying default rule (payingDefault.ts): the method is marked and the customer's pointer kept in step.
 */
async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  next = holdNestedMethods(ctx, next, previous);
  next = reopenOnNewEntity(await resolveInlineEntity(ctx, next, previous), previous);
  next = await applySettingsTemplate(ctx, next, previous);
  const requested = next.data.default_payment_method;
  if (requested === undefined || (previous && requested === previous.data.default_payment_method)) return next;
  if (!previous) throw invalidAttributes({ default_payment_method: 'Attach a payment method to the customer first, then set it as default' });
  if (requested !== null && !(await ownsMethod(ctx.tx, ctx.tenant, next.id, String(requested)))) {
    throw invalidAttributes({ default_payment_method: 'No payment method with this id belongs to this customer' });
  }
  // This row is being written by the caller; only the methods need changing here.
  await markPayingDefault(ctx, next.id, requested === null ? null : String(requested));
  return next;
}

/** Nested `payment_methods` are created after the account row exists (afterWrite); the account keeps none of them. */
function holdNestedMethods(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): StoredObject {
  if (next.data.payment_methods === undefined) return next;
  if (previous) throw invalidAttributes({ payment_methods: 'Add payment methods with POST /payment_methods' });
  const { payment_methods: methods, ...data } = next.data;
  (ctx.nestedInputs ??= new Map()).set(next.id, methods as unknown[]);
  return { ...next, data };
}

/** A processing account's nested methods become its funding methods (v2 `account_defaults.funding = all`). */
async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  await verifyAttachedEntity(ctx, next, previous);
  const methods = previous ? undefined : ctx.nestedInputs?.get(next.id);
  if (!methods) return;
  ctx.nestedInputs!.delete(next.id);
  const owner = ctx.version === 'v1' ? 'customer_id' : 'account_id';
  for (const [i, method] of methods.entries()) {
    const body = { ...(method as Record<string, unknown>), [owner]: next.id };
    delete body.object;
    try {
      await createNested(ctx, paymentMethods, body, new Map([['account_defaults.funding', 'all']]));
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) throw invalidAttributes({ payment_methods: { [i]: error.details ?? error.message } });
      throw error;
    }
  }
}

async function validate(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  await validateEntityReference(ctx, next, previous);
  const primary = next.data.primary_processing_id;
  if (typeof primary === 'string' && primary !== previous?.data.primary_processing_id) {
    if (!(await findProcessingAccount(ctx.tx, ctx.tenant, primary))) {
      throw invalidAttributes({ primary_processing_id: 'No processing account with this id' });
    }
  }
}

async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  const processingIds = rows.filter((r) => r.type === 'processing').map((r) => r.id);
  const deleting = new Set(rows.map((r) => r.id));
  const dependents = await hasDependentCustomers(ctx.tx, ctx.tenant, processingIds);
  const blocking = dependents.filter((d) => !deleting.has(d.customer_id));
  if (blocking.length) {
    throw invalidAttributes({ id: `Processing account ${blocking[0].processing_id} is the primary processing account of ${blocking[0].customer_id}` });
  }
}

function processingStatus(row: StoredObject | null): unknown {
  return (row?.data.processing as { status?: unknown } | undefined)?.status;
}

/** `processing_status` on every change of a processing account's status, creation included. */
function events(_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] {
  if (!next || next.type !== 'processing') return [];
  const status = processingStatus(next);
  if (previous && processingStatus(previous) === status) return [];
  return [statusEvent(PROCESSING_STATUS_TRIGGER, 'processing_account', next.id, status == null ? null : String(status))];
}

/** Derived parts of the rendered account: its entity, its processing settings id and, when asked, its balance. */
async function load(ctx: RuleContext, rows: StoredObject[], include: Set<string>): Promise<void> {
  await showEntities(ctx, rows);
  showSettingsIds(rows);
  if (include.has('balance')) await showBalances(ctx, rows);
}

/** The fields whose rules write or look up other rows: an entity, nested methods, the default method, a settings template. */
const LINKED = ['entity', 'legal_entity', 'entity_id', 'payment_methods', 'default_payment_method', 'processing_settings_id'];

/**
 * An account with only its own fields is one row (and a processing account's status event): no
 * entity, nested methods, default method or settings template to write or look up.
 */
function isPlainAccount(row: StoredObject): boolean {
  return LINKED.every((key) => row.data[key] === undefined);
}

/** A change of a customer that leaves its linked fields as they were writes the customer's row alone. */
function isPlainCustomerChange(next: StoredObject, previous: StoredObject): boolean {
  return next.type === 'customer' && LINKED.every((key) => JSON.stringify(next.data[key]) === JSON.stringify(previous.data[key]));
}

export const accountRules: FamilyRules = {
  prepare, validate, afterWrite, load, beforeDelete, events,
  createSteps: rulesOnPool(isPlainAccount),
  plainChange: isPlainCustomerChange,
  // A customer's delete writes nothing else: beforeDelete looks only for a processing account's dependents.
  plainDelete: (row) => row.type === 'customer',
};
