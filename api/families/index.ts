/** The registry: every URL collection and the family behind it. A new family is a new folder plus one line here. */
import type { Collection } from '../engine/family.ts';
import { accounts } from './accounts/family.ts';
import { paymentMethods } from './payment_methods/family.ts';
import { transactions } from './transactions/family.ts';
import { transferEntries } from './transfers/family.ts';
import { webhookLogs } from './webhook_logs/family.ts';
import { webhooks } from './webhooks/family.ts';

export const collections: Collection[] = [
  { path: 'customers', family: accounts, fixedType: 'customer' },
  { path: 'processing_accounts', family: accounts, fixedType: 'processing' },
  { path: 'accounts', family: accounts },
  { path: 'payment_methods', family: paymentMethods },
  { path: 'transactions', family: transactions },
  { path: 'webhooks', family: webhooks },
  { path: 'webhook_logs', family: webhookLogs, readOnly: true, newestFirst: true },
  { path: 'transfers', family: transferEntries, readOnly: true },
  { path: 'transaction_ledgers', family: transferEntries, readOnly: true },
];

export const collectionByPath = new Map(collections.map((c) => [c.path, c]));
