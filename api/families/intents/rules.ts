/**
 * Intent rules: options checked per kind, a client token for element kinds (made through
 * clientTokens.ts, so an intent allows exactly what a token from /access_tokens would), a
 * hosted page and recipients for link kinds, and the expiry job.
 */
import { issueClientToken, validateIntent, type IntentKind } from './clientTokens.ts';
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { hashKey } from '../../keys.ts';
import { isLinkKind, type LinkKind } from './kinds.ts';
import { checkLinkOptions } from './linkOptions.ts';
import { checkRecipients, hostedPageUrl, LINK_LIFETIME_MS, linkStatusEvents, refuseChanges, scheduleExpiry } from './links.ts';
import { queueLinkEmails } from './outbox.ts';
import { LINK_OBJECTS } from './triggers.ts';

/** validateIntent names its fields under `intent`; here the options are top-level. */
function withoutIntentPrefix(error: unknown): unknown {
  if (error instanceof ApiError && error.status === 400 && isPlainObject(error.details?.intent)) return invalidAttributes(error.details.intent);
  return error;
}

async function prepareElement(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  let options: Record<string, unknown>;
  try {
    options = validateIntent({ [row.type]: row.data[row.type] ?? {} }).options;
  } catch (error) {
    throw withoutIntentPrefix(error);
  }
  const token = await issueClientToken(ctx.tx, ctx.tenant, { kind: row.type as IntentKind, options }, ctx.domain.now());
  const secret = String(token.id);
  const revealed: Record<string, unknown> = { client_token: secret };
  // The checkout page's address carries the token: shown with it, never stored.
  if (row.type === 'checkout_page') revealed.url = hostedPageUrl('checkout', secret);
  (ctx.revealed ??= new Map()).set(row.id, revealed);
  const expiresAt = new Date(String(token.expires_at).replace(' ', 'T') + 'Z');
  return { ...row, data: { ...row.data, [row.type]: options, token_hash: hashKey(secret).toString('hex'), expires_at: expiresAt.toISOString() } };
}

function prepareLink(ctx: RuleContext, row: StoredObject, kind: LinkKind): StoredObject {
  const options = checkLinkOptions(kind, row.data[kind]);
  const data: Record<string, unknown> = { ...row.data, [kind]: options };
  if (row.data.send_to !== undefined && row.data.send_to !== null) data.send_to = checkRecipients(row.data.send_to);
  data.url = hostedPageUrl(kind === 'checkout_link' ? 'checkout' : 'enroll', row.id);
  data.expires_at = new Date(ctx.domain.now().getTime() + LINK_LIFETIME_MS).toISOString();
  return { ...row, data };
}

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  if (previous) {
    refuseChanges(next, previous, [next.type, 'send_to']);
    return next;
  }
  return isLinkKind(next.type) ? prepareLink(ctx, next, next.type) : prepareElement(ctx, next);
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  if (previous) return;
  await scheduleExpiry(ctx, 'intents', next);
  await queueLinkEmails(ctx, 'intent', next);
}

export const intentRules: FamilyRules = { prepare, afterWrite, events: linkStatusEvents(LINK_OBJECTS.intents) };
