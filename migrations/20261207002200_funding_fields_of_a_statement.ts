import type { Knex } from 'knex';
import { FUNDING_FIELDS_ONE_LOOKUP } from './20261203000300_funding_fields_one_lookup.ts';

/**
 * The funding fields of a processed transaction (fee, or conv_fee for a payer who pays it, funding
 * status and date) are computed by SQL functions that both the funding trigger and a statement
 * that inserts many rows can call: `transaction_funding_due` says whether a row gets them,
 * `transaction_funding_fields_of` builds them from the row, its processing account's data (null
 * when there is none: the default delay of 2, whatever `funding_delay` says) and its test
 * clock's time (null when none). Both are SQL expressions the planner inlines.
 *
 * The trigger fires only for a processed row that has no funding status yet, so a statement that
 * sets the fields itself, joining the account and the clock as the trigger reads them (a card
 * payment's, api/families/transactions/repository.ts), costs no trigger call per row: the call,
 * its query and its record handling cost more Postgres CPU than the join. Every other writer is
 * funded by the trigger.
 */
const FUNDED_TYPES = `('payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal')`;

const FUNCTIONS = `
  create function transaction_funding_due(kind text, data jsonb) returns boolean language sql immutable return
    kind in ${FUNDED_TYPES} and (data->>'amount')::bigint is distinct from 0
    and data->>'status' = 'processed' and data->>'funding_status' is null;

  create function transaction_funding_fields_of(kind text, data jsonb, account jsonb, clock timestamptz) returns jsonb
    language sql stable return
    jsonb_build_object(
      'fee', case when data->>'conv_fee_payer' = 'true' then 0
                  else transaction_fee(kind, data->>'payment_method_type', (data->>'amount')::bigint) end,
      'funding_status', 'pending',
      'funding_date', add_business_days((greatest(now(), clock) at time zone 'utc')::date,
                        case when data->>'funding_timing' in ('rapid', 'instant') then 0
                             when account is null then 2
                             else coalesce((data->>'funding_delay')::int, (account->'processing'->'funding'->>'delay')::int, 2) end)::text)
    || case when data->>'conv_fee_payer' = 'true'
         then jsonb_build_object('conv_fee', transaction_fee(kind, data->>'payment_method_type', (data->>'amount')::bigint))
         else '{}' end;`;

const FUNDING_FIELDS = `
  create or replace function transaction_funding_fields() returns trigger language plpgsql as $$
  declare
    account jsonb;
    clock timestamptz;
  begin
    if transaction_funding_due(new.type, new.data) and (tg_op = 'INSERT' or old.data->>'status' is distinct from 'processed') then
      select (select a.data from accounts a where a.id = new.data->>'processing_id'),
             (select c.now from test_clocks c where c.org_id = new.org_id and c.environment = new.environment)
        into account, clock;
      new.data := new.data || transaction_funding_fields_of(new.type, new.data, account, clock);
    elsif tg_op = 'UPDATE' and new.type in ${FUNDED_TYPES} and (new.data->>'amount')::bigint is distinct from 0
          and old.data->>'status' = 'processed' and new.data->>'status' in ('voided', 'rejected')
          and old.data->>'funding_status' in ('pending', 'held') then
      -- Not yet paid out: the reversal cancels it (inside pending, or against the available money
      -- it was cleared into); there is nothing left to fund.
      new.data := new.data || '{"funding_status": null}'::jsonb;
    end if;
    return new;
  end $$;`;

const INSERT_TRIGGER = (when: string) => `
  drop trigger transactions_funding_fields on transactions;
  create trigger transactions_funding_fields before insert on transactions
    for each row when (${when}) execute function transaction_funding_fields();`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(FUNCTIONS);
  await knex.raw(FUNDING_FIELDS);
  await knex.raw(INSERT_TRIGGER(`new.data->>'status' = 'processed' and new.data->>'funding_status' is null`));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(INSERT_TRIGGER(`new.data->>'status' = 'processed'`));
  await knex.raw(FUNDING_FIELDS_ONE_LOOKUP);
  await knex.raw('drop function transaction_funding_fields_of(text, jsonb, jsonb, timestamptz); drop function transaction_funding_due(text, jsonb);');
}
