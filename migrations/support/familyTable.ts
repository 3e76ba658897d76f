/**
 * A family table in one call, for a new family's migration (docs/adding-a-family.md). Every
 * family table has the same shape (migrations/20261122000001_foundation.ts, with the tenant keys of
 * 20261123000010_tenant_keys.ts): the engine's columns, the primary key on `id`, and tenant
 * indexes that lead with `tenant_key(org_id, environment)`, so lists scan one tenant and by-id
 * lookups can only use the primary key. Anything else of the family lives in `data`.
 *
 * A migration states its family's types as they are when it is written (not read from the
 * family's declaration), so it makes the same table whenever it runs.
 *
 *   export const up = (knex: Knex) => createFamilyTable(knex, { table: 'widgets', types: ['widget'] });
 *   export const down = (knex: Knex) => dropFamilyTable(knex, 'widgets');
 */
import type { Knex } from 'knex';

export interface FamilyTable {
  /** the family's `table` */
  table: string;
  /** the values the `type` column allows (the family's `types`); a family of one type also gets it as the default */
  types: readonly string[];
  /**
   * Tenant indexes beyond created_at (and type, with more than one type): each is
   * `<table>_by_tenant_<name>` on the tenant key then `on`, e.g. `{ invoice: { on: "(data->>'invoice_id')" } }`;
   * `where` makes it partial.
   */
  indexes?: Record<string, { on: string; where?: string }>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function identifier(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`Not a plain lower-case SQL identifier: ${JSON.stringify(name)}`);
  return name;
}

function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** The statements that make the table and its indexes, in order. */
export function familyTableStatements(spec: FamilyTable): string[] {
  const table = identifier(spec.table);
  if (spec.types.length === 0) throw new Error(`${table}: a family table needs at least one type`);
  const onlyType = spec.types.length === 1 ? ` default ${literal(spec.types[0])}` : '';
  const statements = [
    `create table ${table} (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null${onlyType} check (type in (${spec.types.map(literal).join(', ')})),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    )`,
    `create index ${table}_by_tenant_created on ${table} (tenant_key(org_id, environment), created_at, id)`,
  ];
  if (spec.types.length > 1) {
    statements.push(`create index ${table}_by_tenant_type on ${table} (tenant_key(org_id, environment), type, created_at, id)`);
  }
  for (const [name, index] of Object.entries(spec.indexes ?? {})) {
    const where = index.where ? ` where ${index.where}` : '';
    statements.push(`create index ${table}_by_tenant_${identifier(name)} on ${table} (tenant_key(org_id, environment), ${index.on})${where}`);
  }
  return statements;
}

/** Creates the family's table and its tenant indexes (in the migration's transaction). */
export async function createFamilyTable(knex: Knex, spec: FamilyTable): Promise<void> {
  for (const statement of familyTableStatements(spec)) await knex.raw(statement);
}

export async function dropFamilyTable(knex: Knex, table: string): Promise<void> {
  await knex.raw(`drop table if exists ${identifier(table)}`);
}
