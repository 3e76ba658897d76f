import type { Knex } from 'knex';

/** Webhooks, one delivery per (webhook, event, series), every attempt logged; worker liveness. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table webhooks (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null default 'webhook',
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index webhooks_tenant_created on webhooks (org_id, environment, created_at, id);
    create index webhooks_matching on webhooks (org_id, environment, (data->>'trigger')) where data->>'status' = 'active';

    -- A delivery is the attempt series of one event to one webhook; a resend starts a new series.
    create table webhook_deliveries (
      id text primary key,
      org_id text not null,
      environment text not null,
      webhook_id text not null references webhooks(id) on delete cascade,
      event_id text not null references events(id),
      series int not null default 0,
      state text not null default 'pending' check (state in ('pending', 'delivered', 'failed', 'cancelled')),
      attempts int not null default 0,
      next_attempt_at timestamptz,
      created_at timestamptz not null default now(),
      finished_at timestamptz,
      unique (webhook_id, event_id, series)
    );

    create table webhook_logs (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null default 'webhook_log',
      data jsonb not null default '{}',
      created_at timestamptz not null default clock_timestamp(),
      modified_at timestamptz not null default clock_timestamp()
    );
    create index webhook_logs_tenant_created on webhook_logs (org_id, environment, created_at, id);
    create index webhook_logs_webhook on webhook_logs ((data->>'webhook_id'), created_at);

    -- Worker processes announce themselves; jobs held by one that stopped announcing are unlocked.
    create table worker_heartbeats (
      worker_id text primary key,
      seen_at timestamptz not null default now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table worker_heartbeats, webhook_logs, webhook_deliveries, webhooks');
}
