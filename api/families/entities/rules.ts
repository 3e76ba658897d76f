/** Entity rules: sealed tax ids, dates, stakeholders created with the entity and shown inside it. */
import { statusEvent, type EventDraft } from '../../db/events.ts';
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { createNested, deleteNested } from '../../engine/operations.ts';
import { render } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { stakeholders } from '../stakeholders/family.ts';
import { normaliseDateAt, sealNumberAt } from '../sealedNumbers.ts';
import { accountBackedBy, stakeholdersOf } from './repository.ts';
import { ENTITY_STATUS_TRIGGER } from './triggers.ts';

/** The API name of the nested stakeholder list in a version. */
const stakeholdersPath = (ctx: RuleContext) => (ctx.version === 'v1' ? 'owners' : 'business.stakeholders');

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  const data = structuredClone(next.data);
  if (data.stakeholders !== undefined) {
    if (previous) throw invalidAttributes({ [stakeholdersPath(ctx)]: 'Add stakeholders with POST /stakeholders' });
    (ctx.nestedInputs ??= new Map()).set(next.id, data.stakeholders as unknown[]);
    delete data.stakeholders;
  }
  const details: Record<string, unknown> = {};
  const taxProblem = sealNumberAt(ctx, data, previous?.data ?? null, 'tax_id');
  if (taxProblem) details[ctx.version === 'v1' ? 'ein' : 'tax_id'] = ctx.version === 'v1' ? taxProblem : { value: taxProblem };
  const dateProblem = normaliseDateAt(data, 'business.formation.date');
  if (dateProblem) {
    if (ctx.version === 'v1') details.start_date = dateProblem;
    else details.business = { formation: { date: dateProblem } };
  }
  if (Object.keys(details).length) throw invalidAttributes(details);
  return { ...next, data };
}

/** Stakeholders named in the create become rows of their own, in the same transaction. */
async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  const nested = previous ? undefined : ctx.nestedInputs?.get(next.id);
  if (!nested) return;
  ctx.nestedInputs!.delete(next.id);
  const owner = ctx.version === 'v1' ? 'legal_entity_id' : 'entity_id';
  for (const [i, item] of nested.entries()) {
    const body = { ...(item as Record<string, unknown>), [owner]: next.id };
    delete body.object;
    try {
      await createNested(ctx, stakeholders, body);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 400) throw error;
      const list = { [i]: error.details ?? error.message };
      throw invalidAttributes(ctx.version === 'v1' ? { owners: list } : { business: { stakeholders: list } });
    }
  }
}

/** Each entity shows its stakeholders (v1 `owners`, v2 `business.stakeholders`) as objects of their own. */
async function load(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  await attachStakeholders(ctx, rows);
}

export async function attachStakeholders(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  const businesses = rows.filter((r) => r.type === 'business');
  const found = await stakeholdersOf(ctx.tx, ctx.tenant, businesses.map((r) => r.id));
  for (const row of businesses) {
    row.data = { ...row.data, stakeholders: found.filter((s) => s.data.entity_id === row.id).map((s) => render(stakeholders, ctx.version, s)) };
  }
}

/** An entity backing an account stays; its stakeholders go with it, through their family's delete. */
async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  const ids = rows.map((r) => r.id);
  const backing = await accountBackedBy(ctx.tx, ctx.tenant, ids);
  if (backing) throw invalidAttributes({ id: `Entity ${backing.entity_id} backs account ${backing.id}; detach it first` });
  await deleteNested(ctx, stakeholders, await stakeholdersOf(ctx.tx, ctx.tenant, ids));
}

/**
 * `entity:status` when verification moves an entity on: `verification_status` is read-only to
 * clients, so only the verification's own changes (./verification.ts) emit it.
 */
function events(_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] {
  if (!next || !previous || next.data.verification_status === previous.data.verification_status) return [];
  return [statusEvent(ENTITY_STATUS_TRIGGER, 'entity', next.id, String(next.data.verification_status))];
}

export const entityRules: FamilyRules = { prepare, afterWrite, load, beforeDelete, events };
