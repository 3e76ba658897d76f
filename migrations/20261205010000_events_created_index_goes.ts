import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * Events lose their index on creation time alone, three index entries fewer per card payment
 * (three events). Every reader of events by creation time reads the tenant index
 * (`events_by_tenant_created`) instead: retention walks it tenant by tenant (api/db/retention.ts),
 * a resend's window is within one tenant (api/families/webhooks/resend.ts), a test-data reset
 * deletes one tenant. Dropped CONCURRENTLY, outside a transaction, so payments never wait on it.
 */
export const config = { transaction: false };

const INDEXES: Array<[name: string, on: string]> = [['events_created', 'events (created_at)']];

export async function up(knex: Knex): Promise<void> {
  await dropIndexesConcurrently(knex, INDEXES);
}

export async function down(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, INDEXES);
}
