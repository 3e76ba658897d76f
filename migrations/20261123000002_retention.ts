import type { Knex } from 'knex';

/**
 * Indexes for the retention task (api/db/retention.ts): the oldest events and webhook logs by
 * creation time, and deliveries by event (the check for a pending delivery, and the foreign-key
 * check when an event goes). Built CONCURRENTLY, so a release on a large database never blocks
 * payments while they build; that needs the migration outside a transaction.
 */
export const config = { transaction: false };

const INDEXES: Array<[name: string, on: string]> = [
  ['events_created', 'events (created_at)'],
  ['webhook_logs_created', 'webhook_logs (created_at)'],
  ['webhook_deliveries_event', 'webhook_deliveries (event_id)'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, on] of INDEXES) {
    // An interrupted concurrent build leaves an invalid index behind: build it again.
    const invalid = await knex.raw('select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid', [name]);
    if (invalid.rows.length > 0) await knex.raw(`drop index concurrently ${name}`);
    await knex.raw(`create index concurrently if not exists ${name} on ${on}`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [name] of INDEXES) await knex.raw(`drop index concurrently if exists ${name}`);
}
