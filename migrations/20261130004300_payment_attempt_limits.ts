import type { Knex } from 'knex';

/**
 * The card-testing limit's counts (api/db/paymentAttempts.ts), shared by every web process and
 * kept across restarts: one row per client address (hashed) or payment link, holding the
 * times (ms) of its attempts of the last minute that were declined or are still waiting for the
 * processor. A row is claimed with one upsert that takes its lock, so concurrent attempts
 * in any process queue on it; rows idle for a minute are deleted by the web processes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table payment_attempt_limits (
      scope text not null,
      key text not null,
      attempts bigint[] not null,
      latest bigint not null,
      primary key (scope, key)
    );
    create index payment_attempt_limits_latest on payment_attempt_limits (latest);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table payment_attempt_limits');
}
