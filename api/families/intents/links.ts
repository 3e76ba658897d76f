/**
 * What link intents and payment activations share: the hosted page address, the recipients a
 * link is sent to, its lifetime and the job that expires it.
 */
import { loadConfig } from '../../config.ts';
import { statusEvent, type EventDraft, type Trigger } from '../../db/events.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { enqueueLinkJob, type LinkTable } from './repository.ts';

export const LINK_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;
export const STATUSES = ['pending', 'finished', 'expired'];
export const EXPIRE_TASK = 'expire_intent';

/**
 * A link family's events rule: its `<object>:status` event when the service ends it (finished or
 * expired through the family's update; clients cannot change the status).
 */
export function linkStatusEvents(object: { name: string; trigger: Trigger }) {
  return (_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] => {
    if (!next || !previous || next.data.status === previous.data.status) return [];
    return [statusEvent(object.trigger, object.name, next.id, String(next.data.status))];
  };
}

let base: string | undefined;

/** `<SETTLE_PUBLIC_URL>/<page>/<id>` (CONTRACT §16); the base is read from configuration once. */
export function hostedPageUrl(page: 'enroll' | 'checkout', id: string): string {
  base ??= loadConfig().publicUrl;
  return `${base}/${page}/${id}`;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_RECIPIENTS = 20;

/** `send_to` as given (a list, or one object): each `{email, name?}`; returns the cleaned list or throws. */
export function checkRecipients(given: unknown, path = 'send_to'): Array<{ name: string | null; email: string }> {
  const list = Array.isArray(given) ? given : [given];
  const problems: Json = {};
  if (list.length > MAX_RECIPIENTS) throw invalidAttributes({ [path]: `At most ${MAX_RECIPIENTS} recipients` });
  const cleaned = list.map((item, i) => {
    const reasons: Json = {};
    if (!isPlainObject(item)) {
      problems[i] = 'Must be an object with an email';
      return null;
    }
    for (const key of Object.keys(item)) if (key !== 'name' && key !== 'email') reasons[key] = 'Unknown field';
    if (typeof item.email !== 'string' || item.email.length > 256 || !EMAIL.test(item.email)) reasons.email = 'Must be an email address';
    if (item.name !== undefined && item.name !== null && (typeof item.name !== 'string' || item.name.length > 256)) reasons.name = 'Must be a string of at most 256 characters';
    if (Object.keys(reasons).length) problems[i] = reasons;
    return { name: typeof item.name === 'string' ? item.name : null, email: String(item.email).trim() };
  });
  if (Object.keys(problems).length) throw invalidAttributes({ [path]: problems });
  return cleaned as Array<{ name: string | null; email: string }>;
}

/** Enqueues the expiry of a link (or element intent) at its `expires_at`, in the caller's transaction. */
export async function scheduleExpiry(ctx: RuleContext, table: LinkTable, row: StoredObject): Promise<void> {
  const payload = { table, id: row.id, org_id: ctx.tenant.orgId, environment: ctx.tenant.environment };
  await enqueueLinkJob(ctx.tx, EXPIRE_TASK, payload, String(row.data.expires_at), `${EXPIRE_TASK}:${row.id}`);
}

/** Only `attrs` of a link or intent change after it is made. */
export function refuseChanges(next: StoredObject, previous: StoredObject, keys: string[]): void {
  const changed = keys.filter((k) => JSON.stringify(next.data[k]) !== JSON.stringify(previous.data[k]));
  if (changed.length) throw invalidAttributes(Object.fromEntries(changed.map((k) => [k, 'Cannot change once created; create a new one'])));
}
