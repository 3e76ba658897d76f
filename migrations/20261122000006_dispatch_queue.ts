import type { Knex } from 'knex';

/** Undispatched events, in commit order, for the batched dispatcher. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index events_undispatched on events (seq) where dispatched_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index events_undispatched');
}
