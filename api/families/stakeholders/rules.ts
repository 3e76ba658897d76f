/** Stakeholder rules: a business entity of this tenant, a sealed SSN, a readable birth date, ownership ≤ 100 %. */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { normaliseDateAt, sealNumberAt } from '../sealedNumbers.ts';
import { lockEntity, otherOwnership } from './repository.ts';

const ROLES = ['owner', 'principal_officer', 'director', 'beneficial_owner', 'authorized_signer', 'control_person'];

/** The v2 `association` object: every key known, every value of its type. Returns reasons by key. */
function associationProblems(association: unknown): Json {
  if (association === undefined || association === null) return {};
  if (!isPlainObject(association)) return { association: 'Must be an object' };
  const problems: Json = {};
  for (const key of Object.keys(association)) if (!['ownership', 'roles', 'title'].includes(key)) problems[key] = 'Unknown field';
  const { ownership, roles, title } = association;
  if (ownership !== undefined && ownership !== null) {
    if (!isPlainObject(ownership)) problems.ownership = 'Must be an object';
    else {
      const reasons: Json = {};
      for (const [key, value] of Object.entries(ownership)) {
        const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
        if (key !== 'percentage' && key !== 'years_owned') reasons[key] = 'Unknown field';
        else if (typeof number !== 'number' || !Number.isFinite(number) || number < 0) reasons[key] = 'Must be a number of at least 0';
        else if (key === 'percentage' && number > 100) reasons[key] = 'Must be at most 100';
        else ownership[key] = number;
      }
      if (Object.keys(reasons).length) problems.ownership = reasons;
    }
  }
  if (roles !== undefined && roles !== null) {
    const list = typeof roles === 'string' ? [roles] : roles;
    if (!Array.isArray(list) || list.length > 10 || !list.every((r) => typeof r === 'string' && ROLES.includes(r))) {
      problems.roles = `Must be a list of: ${ROLES.join(', ')}`;
    } else association.roles = list;
  }
  if (title !== undefined && title !== null && (typeof title !== 'string' || title.length > 256)) problems.title = 'Must be a string of at most 256 characters';
  return Object.keys(problems).length ? { association: problems } : {};
}

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  const v1 = ctx.version === 'v1';
  const data = structuredClone(next.data);
  const details: Json = { ...(v1 ? {} : associationProblems(data.association)) };
  const entityId = String(data.entity_id);
  if (entityId !== previous?.data.entity_id) {
    // Locked: a delete of the entity either sees this stakeholder (and takes it along) or wins first.
    const entity = await lockEntity(ctx.tx, ctx.tenant, entityId);
    if (!entity) details[v1 ? 'legal_entity_id' : 'entity_id'] = 'No entity with this id';
    else if (entity.type !== 'business') details[v1 ? 'legal_entity_id' : 'entity_id'] = 'Stakeholders belong to business entities';
  }
  const ssn = sealNumberAt(ctx, data, previous?.data ?? null, 'govt_id.tax_id');
  if (ssn) Object.assign(details, v1 ? { ssn } : { govt_id: { tax_id: { value: ssn } } });
  const birth = normaliseDateAt(data, 'personal_information.birth_date');
  if (birth) Object.assign(details, v1 ? { birth_date: birth } : { personal_information: { birth_date: birth } });
  if (Object.keys(details).length) throw invalidAttributes(details);
  return { ...next, data };
}

/** The stakeholders of one entity own at most 100 % between them. */
async function validate(ctx: RuleContext, next: StoredObject): Promise<void> {
  const percentage = (next.data.association as { ownership?: { percentage?: unknown } } | undefined)?.ownership?.percentage;
  if (typeof percentage !== 'number') return;
  // The entity's row lock makes concurrent stakeholders of one entity add up one after another.
  await lockEntity(ctx.tx, ctx.tenant, String(next.data.entity_id));
  const others = await otherOwnership(ctx.tx, ctx.tenant, String(next.data.entity_id), next.id);
  if (others + percentage > 100) {
    const reason = `Stakeholders of one entity own at most 100% together (others hold ${others}%)`;
    throw invalidAttributes(ctx.version === 'v1' ? { ownership: reason } : { association: { ownership: { percentage: reason } } });
  }
}

export const stakeholderRules: FamilyRules = { prepare, validate };
