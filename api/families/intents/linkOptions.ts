/**
 * Options of the link kinds (CONTRACT §13), checked like the element kinds' (clientTokens.ts):
 * every key known, every value of its type, defaults filled in.
 */
import { z } from 'zod';
import { setPath } from '../../engine/view.ts';
import { parseMoney } from '../../schema/values.ts';
import { invalidAttributes, type ErrorDetails } from '../../errors.ts';

const money = z.union([z.number(), z.string()]).superRefine((value, check) => {
  const parsed = parseMoney(value);
  if (!parsed.ok) check.addIssue({ code: 'custom', message: parsed.reason });
});
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const id = z.string().max(64);
const url = z.string().max(2048).regex(/^https?:\/\//, 'Must be an http(s) URL');

const LINK_OPTIONS = {
  checkout_link: z.strictObject({
    amount: money.optional(),
    amount_editable: flag.default(false),
    description: z.string().min(1).max(1024),
    processing_id: id.optional(),
    customer_id: id.optional(),
    invoice_id: id.optional(),
    order_number: z.string().max(128).optional(),
    card_payments: flag.default(true),
    bank_account_payments: flag.default(false),
    billing_address: flag.default(false),
    redirects: z.strictObject({ completed_url: url.optional(), return_url: url.optional() }).optional(),
  }).refine((o) => o.amount !== undefined || o.invoice_id !== undefined || o.amount_editable, { path: ['amount'], message: 'Required unless invoice_id is given or amount_editable' }),
  payouts_enrollment_link: z.strictObject({
    entity_name: z.string().max(256).optional(),
    entity_type: z.enum(['business', 'individual']).optional(),
    purpose: z.string().max(1024).optional(),
    processing_id: id.optional(),
    redirects: z.strictObject({ completed_url: url.optional() }).optional(),
  }),
  account_enrollment_link: z.strictObject({
    account_template: z.strictObject({ id: id.optional(), type: z.literal('processing').default('processing') }).default({ type: 'processing' }),
    entity: z.strictObject({
      country: z.enum(['US', 'CA']).optional(),
      legal_name: z.string().max(256).optional(),
      type: z.enum(['business', 'individual']).optional(),
    }).optional(),
    redirects: z.strictObject({ completed_url: url.optional() }).optional(),
  }),
} as const;

type LinkKind = keyof typeof LINK_OPTIONS;

export function checkLinkOptions(kind: LinkKind, options: unknown): Record<string, unknown> {
  const parsed = LINK_OPTIONS[kind].safeParse(options ?? {});
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const details: ErrorDetails = {};
  for (const issue of parsed.error.issues) {
    const path = [kind, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) setPath(details, [...path, key].join('.'), 'Unknown option');
    else setPath(details, path.join('.'), issue.message.includes('received undefined') ? 'Required' : issue.message);
  }
  throw invalidAttributes(details);
}
