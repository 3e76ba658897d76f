import type { Knex } from 'knex';

/**
 * The e-mail outbox of link intents and payment activations: one row per recipient per link
 * (unique, so a recipient is never queued twice), written with the link in its transaction,
 * sent by the worker (`send_link_email`). `sending` is claimed before the SMTP exchange and only
 * a definite refusal puts a row back to `pending`: a message is sent at most once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table link_emails (
      id text primary key,
      org_id text not null,
      environment text not null,
      object_type text not null check (object_type in ('intent', 'payment_activation')),
      object_id text not null,
      kind text not null,
      recipient text not null,
      recipient_name text,
      url text not null,
      state text not null default 'pending' check (state in ('pending', 'sending', 'sent', 'failed')),
      attempts int not null default 0,
      last_error text,
      message_id text,
      created_at timestamptz not null default now(),
      sent_at timestamptz,
      unique (object_id, recipient)
    );
    create index link_emails_by_tenant_created on link_emails (tenant_key(org_id, environment), created_at, id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table link_emails');
}
