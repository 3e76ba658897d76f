/**
 * The registry: every URL collection and the family behind it, and what the families declare for
 * the rest of the service (webhook triggers, client-token scopes), collected here. A new family is
 * a new folder plus one line here (docs/adding-a-family.md).
 */
import type { ClientScopes, Collection, Family } from '../engine/family.ts';
import { accounts } from './accounts/family.ts';
import { followPayingDefault } from './accounts/payingPointer.ts';
import { defaultFundingMethod, planRelease, postRelease } from './funding/release.ts';
import { registerAuditedFamilies } from './audit_events/changes.ts';
import { auditEvents } from './audit_events/family.ts';
import { billingCharges } from './billing_schedules/charges.ts';
import { billingSchedules } from './billing_schedules/family.ts';
import { entities, legalEntities } from './entities/family.ts';
import { intents } from './intents/family.ts';
import { stakeholders } from './stakeholders/family.ts';
import { invoices } from './invoices/family.ts';
import { invoiceItems, lineItems, paymentAllocations } from './invoices/items.ts';
import { paymentLinks } from './payment_links/family.ts';
import { paymentActivations } from './payment_activations/family.ts';
import { paymentMethods } from './payment_methods/family.ts';
import { registerPayingDefaultFollower } from './payment_methods/rules.ts';
import { processingSettings } from './processing_settings/family.ts';
import { profiles } from './profiles/family.ts';
import { transactions } from './transactions/family.ts';
import { registerReleaseRules } from './transactions/releases.ts';
import { transferEntries } from './transfers/family.ts';
import { transactionOperations } from './transaction_operations/family.ts';
import { webhookLogs } from './webhook_logs/family.ts';
import { registerTriggers, webhooks } from './webhooks/family.ts';

export const collections: Collection[] = [
  { path: 'customers', family: accounts, fixedType: 'customer' },
  { path: 'processing_accounts', family: accounts, fixedType: 'processing' },
  { path: 'accounts', family: accounts },
  { path: 'entities', family: entities },
  { path: 'legal_entities', family: legalEntities, fixedType: 'business' },
  { path: 'stakeholders', family: stakeholders },
  { path: 'processing_settings', family: processingSettings, readOnly: true },
  { path: 'profiles', family: profiles, readOnly: true },
  { path: 'intents', family: intents },
  { path: 'payment_activations', family: paymentActivations },
  { path: 'payment_methods', family: paymentMethods },
  { path: 'transactions', family: transactions },
  { path: 'webhooks', family: webhooks },
  { path: 'webhook_logs', family: webhookLogs, readOnly: true, newestFirst: true },
  { path: 'transfers', family: transferEntries, readOnly: true },
  { path: 'transaction_ledgers', family: transferEntries, readOnly: true },
  { path: 'transaction_operations', family: transactionOperations, readOnly: true },
  { path: 'invoices', family: invoices },
  { path: 'line_items', family: lineItems },
  { path: 'invoice_items', family: invoiceItems, fixedType: 'charge' },
  { path: 'payment_allocations', family: paymentAllocations, fixedType: 'payment' },
  { path: 'payment_links', family: paymentLinks },
  { path: 'billing_schedules', family: billingSchedules },
  { path: 'billing_charges', family: billingCharges },
  { path: 'billing_items', family: billingCharges },
  { path: 'audit_events', family: auditEvents, readOnly: true, newestFirst: true },
];

export const collectionByPath = new Map(collections.map((c) => [c.path, c]));

/** Every family behind a collection, once each, in the order of the list above. */
export const families: Family[] = [...new Set(collections.map((c) => c.family))];

function triggersOf(family: Family): readonly string[] {
  return family.triggers ?? [];
}

function clientScopesOf(family: Family): ClientScopes {
  return family.clientScopes ?? {};
}

/** Every trigger a family declares, once each: the values a webhook's `trigger` accepts. */
export const webhookTriggers: string[] = [...new Set(families.flatMap(triggersOf))];
registerTriggers(webhookTriggers);
registerAuditedFamilies(families);
registerPayingDefaultFollower(followPayingDefault);
registerReleaseRules({ defaultFundingMethod, planRelease, postRelease });

/**
 * What a client token may call, by its intent kind (`none`: made without an intent): `create` in a
 * family's `clientScopes` is a POST to each of its writable collections. A kind not listed may call
 * nothing.
 */
export const clientTokenScopes: Record<string, Array<[method: string, path: string]>> = {};
for (const collection of collections) {
  if (collection.readOnly) continue;
  for (const [kind, operations] of Object.entries(clientScopesOf(collection.family))) {
    if (operations.includes('create')) (clientTokenScopes[kind] ??= []).push(['POST', `/${collection.path}`]);
  }
}
