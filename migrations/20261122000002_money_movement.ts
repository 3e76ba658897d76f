import type { Knex } from 'knex';

/** Payment methods, transactions, their transfer/ledger entries, and client tokens. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table payment_methods (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('card', 'bank_account')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index payment_methods_tenant_created on payment_methods (org_id, environment, created_at, id);
    create index payment_methods_account on payment_methods (org_id, environment, (data->>'account_id'));

    create table transactions (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('payment', 'payout', 'refund', 'deposit', 'withdraw')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index transactions_tenant_created on transactions (org_id, environment, created_at, id);
    create index transactions_tenant_status on transactions (org_id, environment, (data->>'status'));

    -- v2 transfers and v1 ledger entries: one row per movement tied to a transaction.
    create table transfers (
      id text primary key,
      org_id text not null,
      environment text not null,
      transaction_id text not null references transactions(id) on delete cascade,
      account_id text,
      assoc_transaction_id text references transactions(id) on delete cascade,
      entry_type text not null,
      amount bigint not null,
      created_at timestamptz not null default now()
    );
    create index transfers_transaction on transfers (transaction_id);
    create index transfers_assoc on transfers (assoc_transaction_id, entry_type);

    create table access_tokens (
      token_hash bytea primary key,
      id_prefix text not null,
      org_id text not null,
      environment text not null,
      intent_kind text not null,
      intent jsonb not null,
      status text not null default 'active',
      uses int not null default 0,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table access_tokens, transfers, transactions, payment_methods');
}
