/**
 * Repository tier: the door's update and delete statements (api/db/auditedChanges.ts) are
 * prepared once per connection and, run again and again, are no longer planned at each run:
 * PostgreSQL keeps a generic plan of each, and that plan still reads each named row by the
 * primary key, not the tenant's every row.
 */
import t, { type Test } from 'tap';
import { deleteAuditedRows, updateAuditedRows, type PathChange } from '../../api/db/auditedChanges.ts';
import type { Db, QueryEvent } from '../../api/db/connection.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const CUSTOMERS = 5000;
const actor = (requestId: string) => JSON.stringify({ actor: { type: 'secret_key', key_prefix: 'sk_test_x' }, request_id: requestId, ip: '127.0.0.1' });
const customerId = (n: number) => `acct_${String(n).padStart(8, '0')}`;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every scan of a table in a plan, as `<table> <node type> <index>`. */
function scansOf(node: PlanNode): string[] {
  const own = node['Relation Name'] && node['Node Type'].endsWith('Scan') ? [`${node['Relation Name']} ${node['Node Type']} ${node['Index Name'] ?? ''}`.trim()] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scansOf)];
}

/** The tenant's many customers, analyzed, so a plan has a real choice between the primary key and every row. */
async function manyCustomers(tx: Db): Promise<void> {
  await tx.raw(
    `insert into accounts (id, org_id, environment, type, data)
     select 'acct_' || lpad(g::text, 8, '0'), ?, ?, 'customer', jsonb_build_object('name', 'Customer ' || g) from generate_series(1, ?) g`,
    [acme.orgId, acme.environment, CUSTOMERS]);
  await tx.raw('analyze accounts');
}

/**
 * Runs `write` for rows 1 to 10 and answers what PostgreSQL keeps of the statement whose text
 * has `marker`: how often it ran on the generic plan and on custom ones, and the scans of
 * accounts in the plan it now runs, explained with the last run's values.
 */
async function planAfterTenRuns(t: Test, tx: Db, marker: string, write: (n: number) => Promise<void>): Promise<{ generic: number; custom: number; scans: string[] }> {
  let last: QueryEvent | null = null;
  const capture = (query: QueryEvent) => { if (query.sql.includes(marker)) last = query; };
  tx.on('query', capture);
  for (let n = 1; n <= 10; n++) await write(n);
  tx.off('query', capture);
  const [prepared] = (await tx.raw(`select name, generic_plans, custom_plans from pg_prepared_statements where statement like ?`, [`%${marker}%`])).rows;
  t.ok(prepared, 'the statement is prepared');
  const { bindings } = last! as QueryEvent;
  // EXECUTE takes its values as SQL literals: each of the last run's, as the driver sent it.
  const [{ values }] = (await tx.raw(`select array[${bindings.map(() => 'quote_nullable(?::text)').join(', ')}] as values`, bindings as never[])).rows;
  const explained = await tx.raw(`explain (format json) execute ${prepared.name}(${(values as string[]).join(', ')})`);
  const scans = scansOf(explained.rows[0]['QUERY PLAN'][0].Plan).filter((scan) => scan.startsWith('accounts '));
  return { generic: prepared.generic_plans, custom: prepared.custom_plans, scans };
}

t.test('a change of one row, run again and again, runs on a generic plan that reads the row by the primary key', async (t) => {
  await withRollback(db, async (tx) => {
    await manyCustomers(tx);
    const plan = await planAfterTenRuns(t, tx, 'update accounts t set data', async (n) => {
      const [written] = await updateAuditedRows(tx, 'accounts', 'account', [{ tenant: acme, id: customerId(n), changes: [[['name'], `Renamed ${n}`]], audit: actor(`req_${n}`) }]);
      t.equal(written?.data.name, `Renamed ${n}`, `change ${n} written`);
    });
    t.ok(plan.generic > 0, `runs on a generic plan (${plan.generic} generic, ${plan.custom} custom)`);
    t.same(plan.scans, ['accounts Index Scan accounts_pkey', 'accounts Index Scan accounts_pkey'], 'the row locked and changed, each read by the primary key');
  });
});

t.test('a delete of one row, run again and again, runs on a generic plan that reads the row by the primary key', async (t) => {
  await withRollback(db, async (tx) => {
    await manyCustomers(tx);
    const plan = await planAfterTenRuns(t, tx, 'delete from accounts t using u', async (n) => {
      const [deleted] = await deleteAuditedRows(tx, 'accounts', 'account', [{ tenant: acme, id: customerId(n), audit: actor(`req_${n}`) }]);
      t.equal(deleted?.id, customerId(n), `row ${n} deleted`);
    });
    t.ok(plan.generic > 0, `runs on a generic plan (${plan.generic} generic, ${plan.custom} custom)`);
    t.same(plan.scans, ['accounts Index Scan accounts_pkey'], 'the row read by the primary key');
  });
});

/** Rows every join of a plan dropped after pairing them (`Rows Removed by Join Filter`), summed. */
function rowsRemovedByJoins(node: PlanNode & { 'Rows Removed by Join Filter'?: number }): number {
  return (node['Rows Removed by Join Filter'] ?? 0) + (node.Plans ?? []).reduce((sum, child) => sum + rowsRemovedByJoins(child), 0);
}

t.test('a change of many rows on the generic plan pairs each item with its own row only', async (t) => {
  await withRollback(db, async (tx) => {
    await manyCustomers(tx);
    const rows = 300;
    const bulk = (n: number) => Array.from({ length: rows }, (_, i) => ({ tenant: acme, id: customerId(1 + i * 7), changes: [[['name'], `Bulk ${n} ${i}`]] as PathChange[], audit: actor(`req_bulk_${n}`) }));
    let last: QueryEvent | null = null;
    const capture = (query: QueryEvent) => { if (query.sql.includes('update accounts t set data')) last = query; };
    tx.on('query', capture);
    await updateAuditedRows(tx, 'accounts', 'account', bulk(1));
    const written = await updateAuditedRows(tx, 'accounts', 'account', bulk(2));
    tx.off('query', capture);
    t.equal(written.filter((row) => String(row?.data.name).startsWith('Bulk 2 ')).length, rows, 'every row changed');
    const [prepared] = (await tx.raw(`select name from pg_prepared_statements where statement like ?`, ['%update accounts t set data%'])).rows;
    const { bindings } = last! as QueryEvent;
    const [{ values }] = (await tx.raw(`select array[${bindings.map(() => 'quote_nullable(?::text)').join(', ')}] as values`, bindings as never[])).rows;
    await tx.raw('set local plan_cache_mode = force_generic_plan');
    const explained = await tx.raw(`explain (analyze, format json) execute ${prepared.name}(${(values as string[]).join(', ')})`);
    t.equal(rowsRemovedByJoins(explained.rows[0]['QUERY PLAN'][0].Plan), 0, 'no join pairs an item with another row');
  });
});
