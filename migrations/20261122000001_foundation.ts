import type { Knex } from 'knex';

/** Orgs, API keys, the accounts family, the events outbox and idempotency records. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table orgs (
      id text primary key,
      name text not null unique,
      created_at timestamptz not null default now()
    );

    create table api_keys (
      id text primary key,
      org_id text not null references orgs(id),
      environment text not null check (environment in ('test', 'live')),
      key_hash bytea not null unique,
      key_prefix text not null,
      settings jsonb not null default '{}',
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );

    -- One table for customers, processing accounts and v2 accounts: one id space, two views.
    create table accounts (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('customer', 'processing')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index accounts_tenant_created on accounts (org_id, environment, created_at, id);
    create index accounts_tenant_type on accounts (org_id, environment, type, created_at);

    -- The transactional outbox: written in the same database transaction as the change.
    create table events (
      seq bigserial not null unique,
      id text primary key,
      org_id text not null,
      environment text not null,
      trigger text not null,
      object_type text not null,
      object_id text not null,
      value jsonb not null,
      created_at timestamptz not null default now(),
      dispatched_at timestamptz
    );
    create index events_tenant_created on events (org_id, environment, created_at);

    create table idempotency_keys (
      org_id text not null,
      environment text not null,
      key text not null,
      request_hash text not null,
      state text not null check (state in ('running', 'done')),
      response_status int,
      response_body jsonb,
      created_at timestamptz not null default now(),
      primary key (org_id, environment, key)
    );
    create index idempotency_keys_created on idempotency_keys (created_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table idempotency_keys, events, accounts, api_keys, orgs');
}
