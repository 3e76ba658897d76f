/** Webhook rules: URL and OAuth checks, sealed secrets (shown once), status changes and their events, logs and health on request. */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, render, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { webhookLogs } from '../webhook_logs/family.ts';
import { healthOfWebhooks, latestLogsOfWebhooks } from '../webhook_logs/repository.ts';
import type { EventDraft } from '../../db/events.ts';
import { formatTimestamp } from '../../schema/values.ts';
import { DISABLED_BY_REQUEST, WEBHOOK_STATUSES, webhookStatusEvent } from './health.ts';
import { currentRandomSource } from '../../ids.ts';

export const MASKED_SECRET = '****';
const LOGS_SHOWN = 100;

/**
 * Why a webhook or token URL is refused, or null. Credentials in it (`user:pass@`) would be sent,
 * shown in every read and log of the webhook: OAuth or a secret in the path does that job.
 */
function urlProblem(text: unknown): string | null {
  let url: URL;
  try {
    url = new URL(String(text));
  } catch {
    return 'Must be an http(s) URL';
  }
  if (typeof text !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return 'Must be an http(s) URL';
  if (url.username !== '' || url.password !== '') return 'Must not contain credentials (user:password@)';
  return null;
}

/**
 * The stored value a rotation (`POST /webhooks/{id}/rotate_secret`) sets beside the new secret:
 * until when the secret in use still signs. No client field writes it; it is never stored.
 */
export const ROTATION_OVERLAP = 'rotation_overlap_until';

export function generateSenderSecret(): string {
  return `whsec_${currentRandomSource()(24).toString('base64')}`;
}

function checkOauth(ctx: RuleContext, data: Json): Json | null {
  const oauth = isPlainObject(data.oauth_params) ? { ...data.oauth_params } : null;
  if (!oauth || Object.values(oauth).every((v) => v === null || v === undefined)) return null;
  const details: Json = {};
  for (const key of ['auth_url', 'client_id', 'client_secret', 'grant_type']) if (!oauth[key]) details[key] = 'Required';
  const authUrlProblem = oauth.auth_url ? urlProblem(oauth.auth_url) : null;
  if (authUrlProblem) details.auth_url = authUrlProblem;
  if (oauth.grant_type && oauth.grant_type !== 'client_credentials') details.grant_type = 'Must be client_credentials';
  if (Object.keys(details).length) throw invalidAttributes({ oauth_params: details });
  if (oauth.client_secret !== MASKED_SECRET) {
    oauth.client_secret_sealed = ctx.domain.vault.encrypt(String(oauth.client_secret));
    oauth.client_secret = MASKED_SECRET;
  }
  return oauth;
}

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  const data: Json = { ...next.data };
  const problem = urlProblem(data.url);
  if (problem) throw invalidAttributes({ url: problem });
  data.oauth_params = checkOauth(ctx, data);
  if (typeof data.sender_secret === 'string') {
    if (data.sender_secret.length < 16) throw invalidAttributes({ sender_secret: 'At least 16 characters' });
  } else if (!previous) {
    data.sender_secret = generateSenderSecret();
  }
  const overlapUntil = typeof data[ROTATION_OVERLAP] === 'string' ? data[ROTATION_OVERLAP] : null;
  delete data[ROTATION_OVERLAP];
  if (typeof data.sender_secret === 'string') {
    if (!previous) (ctx.revealed ??= new Map()).set(next.id, { sender_secret: data.sender_secret });
    data.sender_secret_sealed = ctx.domain.vault.encrypt(data.sender_secret);
    delete data.sender_secret;
    // A secret set outright replaces every secret at once. A rotation keeps the one in use signing
    // until the overlap ends (a previous one still in its overlap ends now: never more than two).
    data.previous_secret_sealed = previous && overlapUntil ? previous.data.sender_secret_sealed : null;
    data.previous_secret_expires_at = previous && overlapUntil ? overlapUntil : null;
  }
  if (previous && previous.data.status === WEBHOOK_STATUSES.disabled && data.status === WEBHOOK_STATUSES.active) {
    // Re-enabled by the integrator: the failure streak starts over.
    data.disabled_reason = null;
    data.disabled_at = null;
    data.failing_since = null;
  } else if (previous && previous.data.status === WEBHOOK_STATUSES.active && data.status === WEBHOOK_STATUSES.disabled) {
    // A reason given with the change stands (the delivery worker's: a 410, retries running out);
    // a client cannot give one (the field is read-only), so its disable is by request.
    if (typeof data.disabled_reason !== 'string' || data.disabled_reason === previous.data.disabled_reason) data.disabled_reason = DISABLED_BY_REQUEST;
    data.disabled_at = ctx.domain.now().toISOString();
  }
  return { ...next, data };
}

/** `webhook:status` on every change of a webhook's status, by request or by the delivery worker. */
function events(_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] {
  if (!next || !previous || next.data.status === previous.data.status) return [];
  return [webhookStatusEvent(next.id, String(next.data.status))];
}

async function load(ctx: RuleContext, found: StoredObject[], include: Set<string>): Promise<void> {
  if (include.has('health') && found.length > 0) {
    const health = await healthOfWebhooks(ctx.tx, ctx.tenant, found.map((w) => w.id));
    for (const webhook of found) {
      const own = health.get(webhook.id);
      webhook.data = { ...webhook.data, health: { last_delivered_at: own?.last_delivered_at ? formatTimestamp(own.last_delivered_at) : null, failed_attempts: own?.failed_attempts ?? 0 } };
    }
  }
  if (!include.has('logs') || found.length === 0) return;
  const logs = await latestLogsOfWebhooks(ctx.tx, ctx.tenant, found.map((w) => w.id), LOGS_SHOWN);
  for (const webhook of found) {
    webhook.data = { ...webhook.data, logs: logs.filter((l) => l.webhook_id === webhook.id).map((l) => render(webhookLogs, ctx.version, l)) };
  }
}

/**
 * A webhook's change is written on its own unless it sets a secret (a secret set outright ends the
 * rotation in progress, which a rotation made meanwhile would outlive) or the OAuth parameters
 * (checked as a whole, so two changes of their parts could make a whole neither checked). A status
 * change is plain too: what prepare sets with it follows from the status as read, and its event
 * makes the door write it only on the row as read.
 */
function plainChange(next: StoredObject, previous: StoredObject): boolean {
  return next.data.sender_secret === undefined && JSON.stringify(next.data.oauth_params) === JSON.stringify(previous.data.oauth_params);
}

export const webhookRules: FamilyRules = { prepare, load, events, plainChange, plainDelete: () => true };
