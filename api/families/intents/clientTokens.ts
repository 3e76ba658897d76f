/**
 * Client tokens (spec §2.2, CONTRACT §9): short-lived credentials for browser elements, each
 * bound to one intent whose options are validated and completed with their defaults here.
 */
import { z } from 'zod';
import type { Db } from '../../db/connection.ts';
import { insertAccessToken } from '../../db/accessTokens.ts';
import type { Tenant } from '../../engine/family.ts';
import { setPath } from '../../engine/view.ts';
import { invalidAttributes, type ErrorDetails } from '../../errors.ts';
import { formatTimestamp, parseMoney } from '../../schema/values.ts';
import { randomBase62 } from '../../ids.ts';
import { hashKey } from '../../keys.ts';
import { hostedPageUrl } from './links.ts';

export const CLIENT_TOKEN_LIFETIME_MS = 30 * 60 * 1000;

/** Amounts follow the API's own money rule (positive, at most two decimals), checked when the token is made. */
const money = z.union([z.number(), z.string()]).superRefine((value, check) => {
  const parsed = parseMoney(value);
  if (!parsed.ok) check.addIssue({ code: 'custom', message: parsed.reason });
});
const authorizedStatus = z.union([z.literal('authorized'), z.strictObject({ value: z.literal('authorized') })]);
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const id = z.string().max(64);

const checkoutPlugin = z.strictObject({
  amount: money.optional(),
  description: z.string().min(1).max(1024),
  amount_editable: flag.default(false),
  processing_id: id.optional(),
  customer_id: id.optional(),
  card_payments: flag.default(true),
  bank_account_payments: flag.default(false),
  order_number: z.string().max(128).optional(),
  billing_address: flag.default(false),
  invoice_id: id.optional(),
  auto_billing_toggle: flag.default(false),
  keep_active_toggle: flag.default(false),
  payment_method_preview: flag.default(false),
  attrs: z.record(z.string(), z.unknown()).optional(),
  status: authorizedStatus.optional(),
  conv_fee: flag.optional(),
}).refine((o) => o.amount !== undefined || o.invoice_id !== undefined, { path: ['amount'], message: 'Required unless invoice_id is given' });

/** Presets of the payment a token creates; the typed keys are fixed for that payment (api/families/clientIntent.ts). */
const presetKeys = {
  description: z.string().min(1).max(1024).optional(),
  order_number: z.string().max(128).optional(),
  customer_id: id.optional(),
  processing_id: id.optional(),
  status: authorizedStatus.optional(),
};
const paymentPreset = z.looseObject({ ...presetKeys, amount: money, description: z.string().min(1).max(1024) });

const INTENTS = {
  checkout_plugin: checkoutPlugin,
  checkout_page: z.strictObject({
    payment: paymentPreset,
    customer_id: id.optional(),
    processing_id: id.optional(),
    status: authorizedStatus.optional(),
    redirects: z.strictObject({ completed_url: z.string().max(2048).optional(), return_url: z.string().max(2048).optional() }).optional(),
    card_payments: flag.default(true),
    bank_account_payments: flag.default(false),
    billing_address: flag.default(false),
    conv_fee: flag.optional(),
  }),
  payment_form: z.strictObject({ payment: z.looseObject({ ...presetKeys, amount: money.optional() }).default({}), conv_fee: flag.optional() }),
  payment_method_form: z.strictObject({
    payment_method: z.looseObject({ transfer_type: z.enum(['send-only', 'receive-only', 'two-way']).optional() }).default({}),
  }),
  processing_account_plugin: z.looseObject({}),
  oauth_client_token: z.looseObject({}),
} as const;

export type IntentKind = keyof typeof INTENTS;

function detailsOf(error: z.ZodError, prefix: string[]): ErrorDetails {
  const details: ErrorDetails = {};
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) setPath(details, [...path, key].join('.'), 'Unknown option');
    else setPath(details, path.join('.'), issue.message.startsWith('Invalid input: expected') && issue.message.includes('received undefined') ? 'Required' : issue.message);
  }
  return details;
}

export function validateIntent(intent: unknown): { kind: IntentKind; options: Record<string, unknown> } {
  if (typeof intent !== 'object' || intent === null || Array.isArray(intent)) throw invalidAttributes({ intent: 'Required: an object with one intent kind' });
  const keys = Object.keys(intent);
  if (keys.length !== 1 || !(keys[0] in INTENTS)) {
    throw invalidAttributes({ intent: `Must have exactly one of: ${Object.keys(INTENTS).join(', ')}` });
  }
  const kind = keys[0] as IntentKind;
  const parsed = INTENTS[kind].safeParse((intent as Record<string, unknown>)[kind] ?? {});
  if (!parsed.success) throw invalidAttributes(detailsOf(parsed.error, ['intent', kind]));
  return { kind, options: parsed.data as Record<string, unknown> };
}

export interface TokenIntent {
  kind: IntentKind;
  options: Record<string, unknown>;
}

/** A `POST /access_tokens` body checked: the intent it names (options completed), or null for a token without one. */
export function tokenRequest(body: Record<string, unknown>): TokenIntent | null {
  if (body.type !== 'client') throw invalidAttributes({ type: body.type === undefined ? 'Required' : 'Must be client' });
  const unknown = Object.keys(body).filter((k) => !['type', 'intent', 'object'].includes(k));
  if (unknown.length) throw invalidAttributes(Object.fromEntries(unknown.map((k) => [k, 'Unknown field'])));
  return body.intent === undefined ? null : validateIntent(body.intent);
}

/**
 * Stores a new client token allowed `intent` (without one: one payment or one payment method,
 * CONTRACT §13) and answers it. `paymentLinkId`: the link whose page mints the token.
 */
export async function issueClientToken(db: Db, tenant: Tenant, intent: TokenIntent | null, now: Date, paymentLinkId?: string): Promise<Record<string, unknown>> {
  const token = `${tenant.environment === 'test' ? 'test_' : ''}client_key_${randomBase62(32)}`;
  const expiresAt = new Date(now.getTime() + CLIENT_TOKEN_LIFETIME_MS);
  await insertAccessToken(db, { hash: hashKey(token), prefix: token.slice(0, -24), tenant, kind: intent?.kind ?? 'none', intent: intentOf(intent), expiresAt, paymentLinkId });
  return clientTokenAnswer(tenant, token, intent, expiresAt);
}

function intentOf(intent: TokenIntent | null): Record<string, unknown> {
  return intent ? { [intent.kind]: intent.options } : {};
}

/** The `access_token` object, shown once, when the token is made. */
export function clientTokenAnswer(tenant: Tenant, token: string, intent: TokenIntent | null, expiresAt: Date): Record<string, unknown> {
  return {
    object: 'access_token',
    id: token,
    type: 'client',
    environ: tenant.environment,
    status: 'active',
    // The checkout page's address carries the token: shown in the answer, never stored.
    intent: intent?.kind === 'checkout_page' ? { checkout_page: { ...intent.options, url: hostedPageUrl('checkout', token) } } : intentOf(intent),
    created_at: formatTimestamp(new Date(expiresAt.getTime() - CLIENT_TOKEN_LIFETIME_MS)),
    expires_at: formatTimestamp(expiresAt),
  };
}

export async function createClientToken(db: Db, tenant: Tenant, body: Record<string, unknown>, now: Date, paymentLinkId?: string): Promise<Record<string, unknown>> {
  return issueClientToken(db, tenant, tokenRequest(body), now, paymentLinkId);
}
