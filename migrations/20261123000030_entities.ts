import type { Knex } from 'knex';

/**
 * Entities (v2 `/entities`, v1 `/legal_entities`) and their stakeholders (v1 owners): family
 * tables like every other, tenant-indexed. Tax numbers live in `data` sealed by the vault, never
 * in clear. Accounts name their entity by `data->>'entity_id'` (next migration's index).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table entities (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('individual', 'business')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index entities_by_tenant_created on entities (tenant_key(org_id, environment), created_at, id);
    create index entities_by_tenant_type on entities (tenant_key(org_id, environment), type, created_at, id);

    create table stakeholders (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null default 'stakeholder',
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index stakeholders_by_tenant_created on stakeholders (tenant_key(org_id, environment), created_at, id);
    create index stakeholders_by_tenant_entity on stakeholders (tenant_key(org_id, environment), (data->>'entity_id'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table stakeholders, entities');
}
