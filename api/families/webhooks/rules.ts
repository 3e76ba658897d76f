/** Webhook rules: URL and OAuth checks, sealed secrets (shown once), logs on request. */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, render, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { webhookLogs } from '../webhook_logs/family.ts';
import { latestLogsOfWebhooks } from '../webhook_logs/repository.ts';
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
  if (typeof data.sender_secret === 'string') {
    if (!previous) (ctx.revealed ??= new Map()).set(next.id, { sender_secret: data.sender_secret });
    data.sender_secret_sealed = ctx.domain.vault.encrypt(data.sender_secret);
    delete data.sender_secret;
    // A secret set outright replaces every secret at once; a rotation (rotateSenderSecret) keeps an overlap.
    data.previous_secret_sealed = null;
    data.previous_secret_expires_at = null;
  }
  if (previous && previous.data.status === 'disabled' && data.status === 'active') {
    // Re-enabled by the integrator: the failure streak starts over.
    data.disabled_reason = null;
    data.failing_since = null;
  }
  return { ...next, data };
}

async function load(ctx: RuleContext, found: StoredObject[], include: Set<string>): Promise<void> {
  if (!include.has('logs') || found.length === 0) return;
  const logs = await latestLogsOfWebhooks(ctx.tx, ctx.tenant, found.map((w) => w.id), LOGS_SHOWN);
  for (const webhook of found) {
    webhook.data = { ...webhook.data, logs: logs.filter((l) => l.webhook_id === webhook.id).map((l) => render(webhookLogs, ctx.version, l)) };
  }
}

export const webhookRules: FamilyRules = { prepare, load };
