import type { Knex } from 'knex';

/**
 * A rate-limited webhook's schedule, shared by every worker process: `next_at` is when the next
 * delivery may go. A delivery takes the slot at `max(next_at, now)` and moves it on by one
 * interval (1 s / rate_limit), in one statement on the webhook's row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table webhook_rate_slots (
      webhook_id text primary key references webhooks(id) on delete cascade,
      next_at timestamptz not null
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table webhook_rate_slots');
}
