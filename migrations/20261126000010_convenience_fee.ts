import type { Knex } from 'knex';

/**
 * The convenience fee (CONTRACT §7): a payment made through an intent with `conv_fee: true` is
 * stored with `conv_fee_payer: true`. When it is processed, the sandbox price of the payment is
 * charged to the payer on top of the amount as `conv_fee`, so the processing account's own `fee`
 * is 0 and its net is the whole amount; any other payment's `conv_fee` stays 0.
 */
export const FUNDING_FIELDS = (feeFields: string, skip = 'false') => `
  create or replace function transaction_funding_fields() returns trigger language plpgsql as $$
  declare
    delay int;
    priced bigint;
  begin
    if new.type not in ('payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal') then return new; end if;
    if ${skip} then return new; end if;
    if new.data->>'status' = 'processed' and (tg_op = 'INSERT' or old.data->>'status' is distinct from 'processed')
       and new.data->>'funding_status' is null then
      select coalesce((new.data->>'funding_delay')::int, (a.data->'processing'->'funding'->>'delay')::int, 2) into delay
        from accounts a where a.id = new.data->>'processing_id';
      if new.data->>'funding_timing' in ('rapid', 'instant') then delay := 0; end if;
      priced := transaction_fee(new.type, new.data->>'payment_method_type', (new.data->>'amount')::bigint);
      new.data := new.data || ${feeFields} || jsonb_build_object(
        'funding_status', 'pending',
        'funding_date', add_business_days(environment_date(new.org_id, new.environment), coalesce(delay, 2))::text);
    elsif tg_op = 'UPDATE' and old.data->>'status' = 'processed' and new.data->>'status' in ('voided', 'rejected')
          and old.data->>'funding_status' in ('pending', 'held') then
      -- Not yet paid out: the reversal cancels it (inside pending, or against the available money
      -- it was cleared into); there is nothing left to fund.
      new.data := new.data || '{"funding_status": null}'::jsonb;
    end if;
    return new;
  end $$;`;

export const CONVENIENCE_FEE_FIELDS = `case when new.data->>'conv_fee_payer' = 'true'
        then jsonb_build_object('fee', 0, 'conv_fee', priced)
        else jsonb_build_object('fee', priced) end`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(FUNDING_FIELDS(CONVENIENCE_FEE_FIELDS));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(FUNDING_FIELDS(`jsonb_build_object('fee', priced)`));
}
