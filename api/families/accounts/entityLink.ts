/**
 * The entity behind an account (CONTRACT §13). An inline `entity{…}` (v2) or `legal_entity{…}`
 * (v1) becomes an entity row through the entities family's own pipeline; `entity_id` (v1
 * `legal_entity_id`) or `{id}` attaches an existing one. The account stores only `entity_id` and
 * shows the entity whole, in the caller's version. Attaching starts verification.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createNested } from '../../engine/operations.ts';
import { isPlainObject, render, type Json } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { entities, legalEntities } from '../entities/family.ts';
import { entitiesByIds, findEntity } from '../entities/repository.ts';
import { attachStakeholders } from '../entities/rules.ts';
import { startVerification } from '../entities/verification.ts';

/** Where each version takes the inline entity (and stores it until it is turned into a row). */
const inlineKey = (ctx: RuleContext) => (ctx.version === 'v1' ? 'legal_entity' : 'entity');
const idKey = (ctx: RuleContext) => (ctx.version === 'v1' ? 'legal_entity_id' : 'entity_id');

function isReference(body: Json): boolean {
  return typeof body.id === 'string' && Object.keys(body).every((k) => k === 'id' || k === 'object');
}

/** Turns an inline entity in the input into `entity_id`, creating the entity when it is new. */
export async function resolveInlineEntity(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  const key = inlineKey(ctx);
  const given = next.data[key];
  if (given === undefined) return next;
  const data = { ...next.data };
  delete data[key];
  if (given === null) return { ...next, data: { ...data, entity_id: null } };
  if (!isPlainObject(given)) throw invalidAttributes({ [key]: 'Must be an object' });
  if (isReference(given)) return { ...next, data: { ...data, entity_id: given.id } };
  if (typeof previous?.data.entity_id === 'string') {
    throw invalidAttributes({ [key]: `This account has entity ${previous.data.entity_id}: change it with PUT /${ctx.version === 'v1' ? 'legal_entities' : 'entities'}/${previous.data.entity_id}, or attach another with ${idKey(ctx)}` });
  }
  const body = { ...given };
  delete body.object;
  try {
    const created = await createNested(ctx, ctx.version === 'v1' ? legalEntities : entities, body);
    return { ...next, data: { ...data, entity_id: created.id } };
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) throw invalidAttributes({ [key]: error.details ?? error.message });
    throw error;
  }
}

function entityChanged(next: StoredObject, previous: StoredObject | null): string | null {
  const id = next.data.entity_id;
  return typeof id === 'string' && id !== previous?.data.entity_id ? id : null;
}

/** A denied processing account given another entity is pending again: verification starts over. */
export function reopenOnNewEntity(next: StoredObject, previous: StoredObject | null): StoredObject {
  const processing = next.data.processing as Json | undefined;
  if (!previous || next.type !== 'processing' || !entityChanged(next, previous) || processing?.status !== 'denied') return next;
  return { ...next, data: { ...next.data, processing: { ...processing, status: 'pending' } } };
}

export async function validateEntityReference(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  const id = entityChanged(next, previous);
  if (id && !(await findEntity(ctx.tx, ctx.tenant, id))) throw invalidAttributes({ [idKey(ctx)]: 'No entity with this id' });
}

/** Attaching starts verification; the entity's row lock also orders this attach against its delete. */
export async function verifyAttachedEntity(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  const id = entityChanged(next, previous);
  if (id && !(await startVerification(ctx, id))) throw invalidAttributes({ [idKey(ctx)]: 'No entity with this id' });
}

/** Puts each account's entity, rendered for the caller's version, where that version shows it. */
export async function showEntities(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  const ids = [...new Set(rows.map((r) => r.data.entity_id).filter((id): id is string => typeof id === 'string'))];
  const found = await entitiesByIds(ctx.tx, ctx.tenant, ids);
  await attachStakeholders(ctx, found);
  const rendered = new Map(found.map((e) => [e.id, render(entities, ctx.version, e)]));
  for (const row of rows) {
    const entity = typeof row.data.entity_id === 'string' ? rendered.get(row.data.entity_id) : undefined;
    if (entity) row.data = { ...row.data, entity, legal_entity: entity };
  }
}
