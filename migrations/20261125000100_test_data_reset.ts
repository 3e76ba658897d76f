import type { Knex } from 'knex';

/**
 * `DELETE /test_data` (api/testData.ts) empties a test environment, its ledger included. Ledger
 * entries stay immutable for every other statement: the reset names the one tenant it empties in
 * a transaction-local setting, and only that tenant's test-environment rows may be deleted while
 * it is set. Live ledgers can never be deleted.
 */
const IMMUTABLE = `
  create or replace function ledger_entries_immutable() returns trigger language plpgsql as $$
  begin
    raise exception 'ledger entries are immutable' using errcode = 'P0001';
  end $$;`;

const IMMUTABLE_BUT_RESET = `
  create or replace function ledger_entries_immutable() returns trigger language plpgsql as $$
  begin
    if tg_op = 'DELETE' and old.environment = 'test'
       and current_setting('settle.test_data_reset', true) = tenant_key(old.org_id, old.environment) then
      return old;
    end if;
    raise exception 'ledger entries are immutable' using errcode = 'P0001';
  end $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(IMMUTABLE_BUT_RESET);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(IMMUTABLE);
}
