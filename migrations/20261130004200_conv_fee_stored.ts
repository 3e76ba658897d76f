import type { Knex } from 'knex';

/**
 * `conv_fee` is stored as every transaction shows it (CONTRACT §7): 0 unless a convenience fee
 * was charged. Rows showed 0 while the store held nothing, so `conv_fee == 0` found none of them
 * and sums over them were null, in Postgres and in the reporting mirror read from it. Every
 * writer passes this trigger; the funding trigger (`transactions_funding_fields`, which fires
 * after it by name) replaces the 0 with the fee when one is charged.
 *
 * Rows stored before it get their 0 here. The update is not a change anyone made, so it leaves
 * `modified_at`, the audit trail and the ledger's reactions to status changes alone; the
 * reporting feed's trigger still notes the rows, so the mirror copies them.
 */
const NO_CONV_FEE = `coalesce(data->'conv_fee', 'null'::jsonb) = 'null'::jsonb`;
const BUSINESS_UPDATE_TRIGGERS = ['transactions_audit_update', 'transactions_post_update'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function transaction_conv_fee_default() returns trigger language plpgsql as $$
    begin
      new.data := new.data || '{"conv_fee": 0}'::jsonb;
      return new;
    end $$;

    create trigger transactions_conv_fee_default before insert or update of data on transactions
      for each row when (coalesce(new.data->'conv_fee', 'null'::jsonb) = 'null'::jsonb)
      execute function transaction_conv_fee_default();

  `);
  const [{ missing }] = (await knex.raw(`select exists (select from transactions where ${NO_CONV_FEE}) as missing`)).rows;
  if (!missing) return;
  await knex.raw(`
    ${BUSINESS_UPDATE_TRIGGERS.map((name) => `alter table transactions disable trigger ${name};`).join('\n    ')}
    update transactions set data = data || '{"conv_fee": 0}'::jsonb where ${NO_CONV_FEE};
    ${BUSINESS_UPDATE_TRIGGERS.map((name) => `alter table transactions enable trigger ${name};`).join('\n    ')}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists transactions_conv_fee_default on transactions;
    drop function if exists transaction_conv_fee_default();
  `);
}
