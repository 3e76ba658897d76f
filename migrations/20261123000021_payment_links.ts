import type { Knex } from 'knex';

/** Payment links (CONTRACT §12): one row per link, shaped like every family table. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table payment_links (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('one_time', 'reusable')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index payment_links_by_tenant_created on payment_links (tenant_key(org_id, environment), created_at, id);
    create index payment_links_by_tenant_invoice on payment_links (tenant_key(org_id, environment), (data->>'invoice_id'))
      where data->>'invoice_id' is not null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists payment_links');
}
