import type { Knex } from 'knex';

/**
 * An idempotency claim is a lease: `claimant` names the one request holding it, which renews
 * `lease_until` while it runs. A claim its request can no longer finish or release (the web
 * process died, its database connection or the whole primary went away) lapses when the lease
 * runs out, within seconds, instead of blocking the retry of the request for a minute.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table idempotency_keys
      add column claimant uuid,
      add column lease_until timestamptz
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table idempotency_keys drop column claimant, drop column lease_until');
}
