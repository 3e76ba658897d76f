import type { Knex } from 'knex';

/**
 * Event writers stop enqueueing a dispatch job. `graphile_worker.add_job` with a job key is an
 * upsert on a shared row: measured at 1.1–2.5 ms of database time per call, twice per card
 * payment (the payment's events and the operations trigger's), and every concurrent payment of a
 * shard queued on that row. The worker's dispatcher now follows the outbox on its own
 * (workers/webhooks/dispatchLoop.ts): it polls the position, which the writers never touch.
 *
 * The trigger functions that wrote events and enqueued the job keep their bodies but for that
 * statement, rewritten from their current definitions so nothing else in them changes.
 */
const FUNCTIONS = ['transaction_note_inserted_operations', 'transaction_note_updated_operations', 'finish_intent_of_spent_token'];
const ENQUEUE = /perform graphile_worker\.add_job\('dispatch_events',[^;]*;/;
const ENQUEUE_TEXT = `perform graphile_worker.add_job('dispatch_events', '{}'::json, job_key => 'dispatch:' || (pg_current_xact_id()::text::bigint % 32), job_key_mode => 'preserve_run_at');`;
const WAKES_ITSELF = 'null; -- the dispatcher follows the outbox on its own (migration 20261123000080)';

async function rewrite(knex: Knex, from: RegExp | string, to: string): Promise<void> {
  for (const name of FUNCTIONS) {
    const found = await knex.raw('select pg_get_functiondef(?::regproc) as definition', [name]);
    const definition: string = found.rows[0].definition;
    const next = definition.replace(from, to);
    if (next === definition) throw new Error(`${name}: no dispatch statement to rewrite`);
    await knex.raw(next.replace(/\?/g, '\\?'));
  }
}

export async function up(knex: Knex): Promise<void> {
  await rewrite(knex, ENQUEUE, WAKES_ITSELF);
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, WAKES_ITSELF, ENQUEUE_TEXT);
}
