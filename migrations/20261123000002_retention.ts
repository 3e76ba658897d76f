import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

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
  await createIndexesConcurrently(knex, INDEXES);
}

export async function down(knex: Knex): Promise<void> {
  await dropIndexesConcurrently(knex, INDEXES);
}
