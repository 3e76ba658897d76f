import type { Knex } from 'knex';

/**
 * What a disabled webhook misses is recorded against it: a delivery in state `skipped` (no job, no
 * attempt), so a resend can find exactly what it missed. Dispatch looks up a tenant's disabled
 * webhooks of a trigger as it does its active ones. (The constraint is checked after it is in
 * place, so the table is not locked against writes while its rows are read.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table webhook_deliveries drop constraint webhook_deliveries_state_check;
    alter table webhook_deliveries add constraint webhook_deliveries_state_check
      check (state in ('pending', 'delivered', 'failed', 'cancelled', 'skipped')) not valid;
    alter table webhook_deliveries validate constraint webhook_deliveries_state_check;
    create index webhooks_disabled_matching on webhooks (org_id, environment, (data->>'trigger')) where data->>'status' = 'disabled';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index webhooks_disabled_matching;
    delete from webhook_deliveries where state = 'skipped';
    alter table webhook_deliveries drop constraint webhook_deliveries_state_check;
    alter table webhook_deliveries add constraint webhook_deliveries_state_check
      check (state in ('pending', 'delivered', 'failed', 'cancelled'));
  `);
}
