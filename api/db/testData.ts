/**
 * SQL of a test environment's reset (api/testData.ts): every row of one tenant, in every table
 * that holds the environment's objects or their traces, deleted and counted by collection. Kept:
 * the org, its API keys, its webhooks (their deliveries and logs go) and everything of other
 * tenants.
 *
 * Deleting a transaction is what tells the reporting mirror: the `reporting_changes` trigger
 * marks each one deleted in the change feed, in this same transaction, and the mirror drops it
 * from ClickHouse as it does for any deleted transaction.
 */
import { rows, type Db } from './connection.ts';
import { tenantScan, type Tenant } from './tenant.ts';

/** The counts a reset answers, by the URL's collection names (tables where no collection shows them). */
export const RESET_COLLECTIONS = [
  'customers', 'processing_accounts', 'entities', 'stakeholders', 'payment_methods', 'transactions', 'transfers',
  'transaction_operations', 'ledger_entries', 'invoices', 'invoice_items', 'payment_allocations', 'payment_links',
  'billing_schedules', 'billing_charges', 'intents', 'payment_activations', 'link_emails', 'events', 'webhook_deliveries',
  'webhook_logs', 'idempotency_keys', 'client_tokens', 'test_clocks', 'jobs', 'audit_events',
] as const;

export type ResetCollection = (typeof RESET_COLLECTIONS)[number];
export type ResetCounts = Record<ResetCollection, number>;

interface Doomed {
  table: string;
  /** SQL naming each deleted row's collection (a column expression or a literal) */
  collection: string;
  /** `scan`: the tenant-key indexes; `key`: org and environment columns (a primary-key prefix or no index) */
  by: 'scan' | 'key';
}

const literal = (name: ResetCollection) => `'${name}'::text`;

/**
 * Every table of tenant rows, each deleted by one data-modifying CTE of the pass's one statement
 * (one snapshot; the foreign keys between them are checked at its end).
 */
const DOOMED: Doomed[] = [
  { table: 'events', collection: literal('events'), by: 'scan' },
  { table: 'webhook_logs', collection: literal('webhook_logs'), by: 'scan' },
  { table: 'link_emails', collection: literal('link_emails'), by: 'scan' },
  { table: 'transfers', collection: literal('transfers'), by: 'scan' },
  { table: 'ledger_entries', collection: literal('ledger_entries'), by: 'scan' },
  { table: 'transaction_operations', collection: literal('transaction_operations'), by: 'scan' },
  { table: 'invoice_items', collection: `case type when 'payment' then ${literal('payment_allocations')} else ${literal('invoice_items')} end`, by: 'scan' },
  { table: 'transactions', collection: literal('transactions'), by: 'scan' },
  { table: 'invoices', collection: literal('invoices'), by: 'scan' },
  { table: 'payment_links', collection: literal('payment_links'), by: 'scan' },
  { table: 'billing_charges', collection: literal('billing_charges'), by: 'scan' },
  { table: 'billing_schedules', collection: literal('billing_schedules'), by: 'scan' },
  { table: 'payment_methods', collection: literal('payment_methods'), by: 'scan' },
  { table: 'intents', collection: literal('intents'), by: 'scan' },
  { table: 'payment_activations', collection: literal('payment_activations'), by: 'scan' },
  { table: 'stakeholders', collection: literal('stakeholders'), by: 'scan' },
  { table: 'entities', collection: literal('entities'), by: 'scan' },
  { table: 'accounts', collection: `case type when 'customer' then ${literal('customers')} else ${literal('processing_accounts')} end`, by: 'scan' },
  { table: 'idempotency_keys', collection: literal('idempotency_keys'), by: 'key' },
  { table: 'access_tokens', collection: literal('client_tokens'), by: 'key' },
  { table: 'test_clocks', collection: literal('test_clocks'), by: 'key' },
];

/** Tables of tenant rows a reset leaves: the keys, the webhooks and the feed's marks of what it deleted. */
export const KEPT_TABLES = ['api_keys', 'webhooks', 'reporting_changes'];

/** Every table a reset empties of the tenant's rows (with `webhook_deliveries`, found through the webhooks). */
export const RESET_TABLES = ['webhook_deliveries', ...DOOMED.map((d) => d.table)];

/** Passes at most: a pass after the first finds only what worker jobs committed during the one before. */
const MAX_PASSES = 5;

function passStatement(tenant: Tenant): { sql: string; bindings: unknown[] } {
  const scan = tenantScan(tenant);
  const byKey = { sql: 'org_id = ? and environment = ?', bindings: [tenant.orgId, tenant.environment] };
  const parts: Array<{ sql: string; bindings: unknown[] }> = [
    // Queued jobs about the tenant's objects (running ones finish and find them gone). Delivery,
    // e-mail, expiry and verification jobs name their tenant; transaction jobs name the transaction.
    // Only graphile-worker's own table has the payloads; its complete_jobs deletes them.
    {
      sql: `jobs as (
        select ${literal('jobs')} as collection from graphile_worker.complete_jobs(array(
          select j.id from graphile_worker._private_jobs j
           where (j.payload->>'org_id' = ? and j.payload->>'environment' = ?)
              or exists (select 1 from transactions t where t.id = j.payload->>'transaction_id' and t.org_id = ? and t.environment = ?))))`,
      bindings: [tenant.orgId, tenant.environment, tenant.orgId, tenant.environment],
    },
    // Deliveries have no tenant index: they are found through the tenant's webhooks (kept).
    {
      sql: `webhook_deliveries as (
        delete from webhook_deliveries
         where webhook_id in (select id from webhooks where ${scan.sql}) and org_id = ? and environment = ?
        returning ${literal('webhook_deliveries')} as collection)`,
      bindings: [...scan.bindings, tenant.orgId, tenant.environment],
    },
    ...DOOMED.map((doomed) => {
      const where = doomed.by === 'scan' ? scan : byKey;
      return { sql: `${doomed.table} as (delete from ${doomed.table} where ${where.sql} returning ${doomed.collection} as collection)`, bindings: where.bindings };
    }),
  ];
  const names = ['jobs', ...RESET_TABLES];
  return {
    sql: `with ${parts.map((p) => p.sql).join(',\n')}
      select collection, count(*)::int as deleted
        from (${names.map((name) => `select collection from ${name}`).join(' union all ')}) gone
       group by collection`,
    bindings: parts.flatMap((p) => p.bindings),
  };
}

/**
 * Deletes every row of the tenant, in the caller's transaction, which must hold the tenant's
 * reset locks (api/db/tenantLocks.ts): API requests are kept out by them; a worker job that held a
 * row lock when a pass reached its row commits before that pass ends, so what it wrote is found by
 * the next pass, and passes repeat until one finds nothing.
 */
export async function deleteTenantRows(tx: Db, tenant: Tenant): Promise<ResetCounts> {
  const counts = Object.fromEntries(RESET_COLLECTIONS.map((name) => [name, 0])) as ResetCounts;
  // The ledger refuses deletes except of the tenant named here (migrations/20261125000100_test_data_reset.ts).
  await rows(tx, `select set_config('settle.test_data_reset', tenant_key(?, ?), true)`, [tenant.orgId, tenant.environment]);
  const statement = passStatement(tenant);
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const found = await rows<{ collection: ResetCollection; deleted: number }>(tx, statement.sql, statement.bindings);
    for (const { collection, deleted } of found) counts[collection] += deleted;
    if (found.length === 0) break;
  }
  // The audit history goes too, through the one function that may delete it (the deletes above wrote none).
  const [audit] = await rows<{ deleted: number }>(tx, 'select reset_audit_events(?, ?) as deleted', [tenant.orgId, tenant.environment]);
  counts.audit_events = audit.deleted;
  return counts;
}
