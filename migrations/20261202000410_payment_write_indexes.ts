import type { Knex } from 'knex';

/**
 * Index entries a card payment writes that no query reads (bench:payments counts them):
 * - a ledger leg is named by its posting, account and bucket (unique already: a second posting of
 *   the same key fails), so that key is the table's primary key and the generated `id`, which
 *   nothing reads, goes with its index and its sequence;
 * - legs are read by posting (the posting key names its transaction), by account and bucket
 *   (balances) and by tenant (a test-data reset), never by `transaction_id` alone: that index goes;
 * - an event's `seq` comes from its own sequence, so it is unique without an index checking it;
 *   the dispatcher reads events through `events_dispatch_order` (txid, seq), a resend orders a
 *   webhook's events by seq after choosing them by tenant and trigger.
 * Each payment writes three ledger legs and three events: nine index entries fewer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table ledger_entries drop column id;
    alter table ledger_entries add constraint ledger_entries_pkey primary key using index ledger_entries_posting;
    drop index ledger_entries_transaction;
    alter table events drop constraint events_seq_key;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table events add constraint events_seq_key unique (seq);
    create index ledger_entries_transaction on ledger_entries (transaction_id);
    alter table ledger_entries drop constraint ledger_entries_pkey;
    create unique index ledger_entries_posting on ledger_entries (posting, account_id, bucket);
    alter table ledger_entries add column id bigint generated always as identity primary key;
  `);
}
