import type { Knex } from 'knex';
import { CONVENIENCE_FEE_FIELDS, FUNDING_FIELDS } from './20261126000010_convenience_fee.ts';

/**
 * The funding trigger runs once for every processed payment, so its cost is paid per payment.
 *
 * - The environment's date is read in the same query as the account's funding delay. Called from
 *   the trigger, `environment_date` (a SQL function with a subquery, which the planner cannot
 *   inline) was parsed and planned again in every transaction; the query here is planned once per
 *   connection. `environment_date` itself stays for anyone who asks for the date.
 * - The fields are built by one `jsonb_build_object` and joined to the row by one concatenation.
 * - `add_business_days` is the closed form of the day-by-day loop (equal for every start date
 *   and every count, checked over all of them across years in the test): a SQL expression the
 *   planner inlines, instead of a PL/pgSQL call that steps through the days.
 * - The scalar subquery over `accounts` keeps the rule that a missing processing account means
 *   the default delay of 2, whatever `funding_delay` says.
 */
export const FUNDING_FIELDS_ONE_LOOKUP = `
  create or replace function transaction_funding_fields() returns trigger language plpgsql as $$
  declare
    delay int;
    today date;
    priced bigint;
  begin
    if new.type not in ('payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal') then return new; end if;
    if (new.data->>'amount')::bigint = 0 then return new; end if;
    if new.data->>'status' = 'processed' and (tg_op = 'INSERT' or old.data->>'status' is distinct from 'processed')
       and new.data->>'funding_status' is null then
      select (select coalesce((new.data->>'funding_delay')::int, (a.data->'processing'->'funding'->>'delay')::int, 2)
                from accounts a where a.id = new.data->>'processing_id'),
             (greatest(now(), (select c.now from test_clocks c where c.org_id = new.org_id and c.environment = new.environment))
                at time zone 'utc')::date
        into delay, today;
      if new.data->>'funding_timing' in ('rapid', 'instant') then delay := 0; end if;
      priced := transaction_fee(new.type, new.data->>'payment_method_type', (new.data->>'amount')::bigint);
      new.data := new.data || case when new.data->>'conv_fee_payer' = 'true'
        then jsonb_build_object('fee', 0, 'conv_fee', priced, 'funding_status', 'pending',
                                'funding_date', add_business_days(today, coalesce(delay, 2))::text)
        else jsonb_build_object('fee', priced, 'funding_status', 'pending',
                                'funding_date', add_business_days(today, coalesce(delay, 2))::text) end;
    elsif tg_op = 'UPDATE' and old.data->>'status' = 'processed' and new.data->>'status' in ('voided', 'rejected')
          and old.data->>'funding_status' in ('pending', 'held') then
      -- Not yet paid out: the reversal cancels it (inside pending, or against the available money
      -- it was cleared into); there is nothing left to fund.
      new.data := new.data || '{"funding_status": null}'::jsonb;
    end if;
    return new;
  end $$;`;

/**
 * Mon–Fri business days after a date. A weekend start counts from the Friday before it; from a
 * weekday d (1 = Monday) n business days later is n calendar days plus two for every weekend
 * crossed, and (d - 1 + n) / 5 weekends are crossed. A count of 0 or less (or none) is the start.
 */
const BUSINESS_DAYS_CLOSED_FORM = `
  create or replace function add_business_days(start date, days int) returns date language sql immutable return
    case when days > 0
      then start - greatest(extract(isodow from start)::int - 5, 0) + days
           + 2 * ((least(extract(isodow from start)::int, 5) - 1 + days) / 5)
      else start end;`;

const BUSINESS_DAYS_LOOP = `
  create or replace function add_business_days(start date, days int) returns date language plpgsql immutable as $$
  declare
    d date := start;
    left_ int := days;
  begin
    while left_ > 0 loop
      d := d + 1;
      if extract(isodow from d) < 6 then left_ := left_ - 1; end if;
    end loop;
    return d;
  end $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(BUSINESS_DAYS_CLOSED_FORM);
  await knex.raw(FUNDING_FIELDS_ONE_LOOKUP);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(FUNDING_FIELDS(CONVENIENCE_FEE_FIELDS, "(new.data->>'amount')::bigint = 0"));
  await knex.raw(BUSINESS_DAYS_LOOP);
}
