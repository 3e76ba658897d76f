import type { Knex } from 'knex';

/**
 * Billing schedules and their charges (CONTRACT §12): v1 `billing_charge` and v2 `billing_item`
 * are one row (`bcrg_`). A schedule's charges are read by schedule, inside its tenant.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table billing_schedules (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index billing_schedules_by_tenant_created on billing_schedules (tenant_key(org_id, environment), created_at, id);
    create index billing_schedules_by_tenant_payer on billing_schedules (tenant_key(org_id, environment), (data->'payer'->>'account_id'));

    create table billing_charges (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index billing_charges_by_tenant_created on billing_charges (tenant_key(org_id, environment), created_at, id);
    create index billing_charges_by_tenant_schedule on billing_charges (tenant_key(org_id, environment), (data->>'billing_schedule_id'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists billing_charges, billing_schedules');
}
