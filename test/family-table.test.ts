/**
 * The migration helper for a new family's table (migrations/support/familyTable.ts) makes the
 * shape every family table has: the engine's columns, the primary key, the `type` check and
 * tenant indexes that lead with the tenant key. Checked against a real database, and against the
 * entities table the hand-written migration made.
 */
import knexFactory, { type Knex } from 'knex';
import t from 'tap';
import { createFamilyTable, dropFamilyTable, familyTableStatements } from '../migrations/support/familyTable.ts';
import { freshDatabase } from './helpers/db.ts';

const knex: Knex = knexFactory({ client: 'pg', connection: { connectionString: await freshDatabase(t) }, pool: { min: 0, max: 2 } });
t.teardown(() => knex.destroy());

interface Column {
  column_name: string;
  data_type: string;
  is_nullable: string;
  column_default: string | null;
}

async function columnsOf(table: string): Promise<Column[]> {
  return (await knex.raw(`select column_name, data_type, is_nullable, column_default from information_schema.columns
                           where table_schema = 'public' and table_name = ? order by ordinal_position`, [table])).rows;
}

/** Each index's definition with the table name taken out, so two tables' indexes compare. */
async function indexesOf(table: string): Promise<string[]> {
  const found: Array<{ indexdef: string }> = (await knex.raw(`select indexdef from pg_indexes where schemaname = 'public' and tablename = ? order by indexname`, [table])).rows;
  return found.map((i) => i.indexdef.replaceAll(table, '<table>'));
}

t.test('a family table made by the helper has the shape of the hand-written entities table', async (t) => {
  await createFamilyTable(knex, { table: 'widgets', types: ['individual', 'business'] });
  t.same(await columnsOf('widgets'), await columnsOf('entities'), 'same columns, types, nullability and defaults');
  t.same(await indexesOf('widgets'), await indexesOf('entities'), 'primary key and tenant indexes (created, type)');
  const check = (await knex.raw(`select pg_get_constraintdef(oid) as def from pg_constraint where conrelid = 'widgets'::regclass and contype = 'c'`)).rows;
  t.same(check.map((c: { def: string }) => c.def), [`CHECK ((type = ANY (ARRAY['individual'::text, 'business'::text])))`]);
  await dropFamilyTable(knex, 'widgets');
  t.equal((await knex.raw(`select to_regclass('widgets') as found`)).rows[0].found, null, 'down drops it');
});

t.test('a row is stored with the defaults, and a type outside the family is refused', async (t) => {
  await createFamilyTable(knex, { table: 'gadgets', types: ['gadget'], indexes: { owner: { on: "(data->>'owner_id')", where: "data->>'owner_id' is not null" } } });
  t.teardown(() => dropFamilyTable(knex, 'gadgets'));
  await knex.raw(`insert into gadgets (id, org_id, environment) values ('gdg_1', 'org_1', 'test')`);
  const [row] = (await knex.raw('select type, data, created_at, modified_at from gadgets')).rows;
  t.equal(row.type, 'gadget', 'a family of one type has it as the default');
  t.same(row.data, {});
  t.ok(row.created_at instanceof Date && row.modified_at instanceof Date);
  await t.rejects(knex.raw(`insert into gadgets (id, org_id, environment, type) values ('gdg_2', 'org_1', 'test', 'widget')`), /check constraint/);
  await t.rejects(knex.raw(`insert into gadgets (id, org_id, environment) values ('gdg_1', 'org_2', 'live')`), /duplicate key/, 'ids are unique across tenants');
  t.same(await indexesOf('gadgets'), [
    'CREATE INDEX <table>_by_tenant_created ON public.<table> USING btree (tenant_key(org_id, environment), created_at, id)',
    "CREATE INDEX <table>_by_tenant_owner ON public.<table> USING btree (tenant_key(org_id, environment), ((data ->> 'owner_id'::text))) WHERE ((data ->> 'owner_id'::text) IS NOT NULL)",
    'CREATE UNIQUE INDEX <table>_pkey ON public.<table> USING btree (id)',
  ], 'one type: no type index; the extra index leads with the tenant key');
});

t.test('names that are not plain identifiers are refused before any SQL runs', async (t) => {
  t.throws(() => familyTableStatements({ table: 'widgets; drop table orgs', types: ['widget'] }), /identifier/);
  t.throws(() => familyTableStatements({ table: 'widgets', types: ['widget'], indexes: { 'x y': { on: 'id' } } }), /identifier/);
  t.throws(() => familyTableStatements({ table: 'widgets', types: [] }), /at least one type/);
  t.match(familyTableStatements({ table: 'widgets', types: ["it's"] })[0], /check \(type in \('it''s'\)\)/, 'type values are quoted literals');
});
