import type { Knex } from 'knex';

/**
 * The ledger under funding (CONTRACT §14).
 *
 * `ledger_entries` holds every money movement of a processing account as legs of balanced
 * postings: the legs of one posting sum to zero (checked per statement), a posting's key is its
 * idempotency key (`process:<txn>`, `clear:<txn>`, `fund:<deposit>`: the unique index makes a
 * second clear or a second deposit of the same thing impossible), and rows are never updated or
 * deleted. The buckets of a processing account are `pending` (processed, not yet cleared),
 * `available` (cleared, not yet deposited), `held` (cleared, waiting for a funding method),
 * `funded` (deposited) and `withdrawn` (pulled back from the funding method, stored negative);
 * `world` (payers) and `fees` are the other side. So at all times
 *   payments − refunds − payouts − chargebacks + reversals − fees
 *     = pending + available + held + funded − withdrawn
 * holds by construction: it is the zero sum of every posting, read per account.
 *
 * Two triggers on `transactions` keep every write path (API, worker transitions, billing runs,
 * chargebacks) in step, in the same database transaction as the change:
 * - before a paying transaction becomes `processed`, it gets its `fee` (sandbox pricing), its
 *   `funding_date` (the environment's date, test clock included, + delay business days) and
 *   `funding_status: pending`;
 * - after the statement, each newly processed paying transaction posts its `process:` legs, and
 *   a processed one that is voided or rejected posts the mirror image (`reverse:`) — from
 *   `pending` while not yet cleared, otherwise from `available` (netted into the next deposit).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table transactions drop constraint transactions_type_check;
    alter table transactions add constraint transactions_type_check
      check (type in ('payment', 'payout', 'refund', 'deposit', 'withdraw', 'chargeback', 'chargeback_reversal'));

    create table ledger_entries (
      id bigint generated always as identity primary key,
      org_id text not null,
      environment text not null,
      account_id text not null,
      -- the transaction a posting belongs to; none for an account's run-level postings (a clearing)
      transaction_id text,
      posting text not null,
      bucket text not null check (bucket in ('pending', 'available', 'held', 'funded', 'withdrawn', 'world', 'fees')),
      amount bigint not null,
      created_at timestamptz not null default now()
    );
    create unique index ledger_entries_posting on ledger_entries (posting, account_id, bucket);
    create index ledger_entries_balance on ledger_entries (tenant_key(org_id, environment), account_id, bucket) include (amount);
    create index ledger_entries_transaction on ledger_entries (transaction_id);

    create function ledger_entries_immutable() returns trigger language plpgsql as $$
    begin
      raise exception 'ledger entries are immutable' using errcode = 'P0001';
    end $$;
    create trigger ledger_entries_no_change before update or delete on ledger_entries
      for each row execute function ledger_entries_immutable();

    create function ledger_entries_balanced() returns trigger language plpgsql as $$
    declare
      unbalanced text;
    begin
      select posting into unbalanced from new_rows group by posting having sum(amount) <> 0 limit 1;
      if unbalanced is not null then
        raise exception 'ledger posting % does not balance', unbalanced using errcode = 'P0001';
      end if;
      return null;
    end $$;
    create trigger ledger_entries_balance_check after insert on ledger_entries
      referencing new table as new_rows for each statement execute function ledger_entries_balanced();

    -- Mon–Fri business days after a date.
    create function add_business_days(start date, days int) returns date language plpgsql immutable as $$
    declare
      d date := start;
      left_ int := days;
    begin
      while left_ > 0 loop
        d := d + 1;
        if extract(isodow from d) < 6 then left_ := left_ - 1; end if;
      end loop;
      return d;
    end $$;

    -- The environment's date (UTC): the later of real time and its test clock (CONTRACT §15).
    create function environment_date(org text, env text) returns date language sql stable return
      (greatest(now(), (select c.now from test_clocks c where c.org_id = org and c.environment = env)) at time zone 'utc')::date;

    -- Money a paying transaction moves into its processing account, in minor units (before fees).
    create function ledger_gross(kind text, amount bigint) returns bigint language sql immutable return
      case when kind in ('payment', 'chargeback_reversal') then amount
           when kind in ('refund', 'payout', 'chargeback') then -amount
           else 0 end;

    -- Sandbox pricing: card 2.9 % + 0.30, bank account 1 % capped at 5.00, half-up to the cent; payments only.
    create function transaction_fee(kind text, method_type text, amount bigint) returns bigint language sql immutable return
      case when kind <> 'payment' then 0
           when method_type = 'bank_account' then least(round(amount::numeric * 0.01), 500)::bigint
           else (round(amount::numeric * 0.029) + 30)::bigint end;

    create function transaction_funding_fields() returns trigger language plpgsql as $$
    declare
      delay int;
    begin
      if new.type not in ('payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal') then return new; end if;
      if new.data->>'status' = 'processed' and (tg_op = 'INSERT' or old.data->>'status' is distinct from 'processed')
         and new.data->>'funding_status' is null then
        select coalesce((new.data->>'funding_delay')::int, (a.data->'processing'->'funding'->>'delay')::int, 2) into delay
          from accounts a where a.id = new.data->>'processing_id';
        if new.data->>'funding_timing' in ('rapid', 'instant') then delay := 0; end if;
        new.data := new.data || jsonb_build_object(
          'fee', transaction_fee(new.type, new.data->>'payment_method_type', (new.data->>'amount')::bigint),
          'funding_status', 'pending',
          'funding_date', add_business_days(environment_date(new.org_id, new.environment), coalesce(delay, 2))::text);
      elsif tg_op = 'UPDATE' and old.data->>'status' = 'processed' and new.data->>'status' in ('voided', 'rejected')
            and old.data->>'funding_status' in ('pending', 'held') then
        -- Not yet paid out: the reversal cancels it (inside pending, or against the available money
        -- it was cleared into); there is nothing left to fund.
        new.data := new.data || '{"funding_status": null}'::jsonb;
      end if;
      return new;
    end $$;
    -- Only rows whose status is (or becomes) processed, voided or rejected reach the function:
    -- funding runs' own updates (funding_status only) skip it.
    create trigger transactions_funding_fields before insert on transactions
      for each row when (new.data->>'status' = 'processed') execute function transaction_funding_fields();
    create trigger transactions_funding_fields_update before update on transactions
      for each row when (new.data->>'status' is distinct from old.data->>'status') execute function transaction_funding_fields();

    create index transactions_funding_due on transactions (tenant_key(org_id, environment), (data->>'processing_id'), (data->>'funding_date'), id)
      where data->>'funding_status' in ('pending', 'held');
    create index transactions_funding_due_any on transactions ((data->>'funding_date'))
      where data->>'funding_status' in ('pending', 'held');
  `);
  await knex.raw(postLegs('transaction_post_inserted', false));
  await knex.raw(postLegs('transaction_post_updated', true));
  await knex.raw(`
    create trigger transactions_post_insert after insert on transactions
      referencing new table as new_rows for each statement execute function transaction_post_inserted();
    create trigger transactions_post_update after update on transactions
      referencing old table as old_rows new table as new_rows for each statement execute function transaction_post_updated();
  `);
}

/**
 * A deposit or withdrawal the bank refuses (or that is voided) gives its money back: its `fund:`
 * posting is mirrored (`unfund:`), and the held transactions a deposit paid out are held again.
 */
const REFUSED = `select n.id from new_rows n join old_rows o on o.id = n.id
         where n.type in ('deposit', 'withdraw') and o.data->>'status' in ('processing', 'processed')
           and n.data->>'status' in ('rejected', 'voided')`;
// Guarded by \`if exists\`: a statement trigger fires for every statement, so an unguarded update
// here would set itself off again without end.
const UNFUND = `
      if exists (${REFUSED}) then
      with refused as (
        ${REFUSED}
      ), unfunded as (
        insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
        select l.org_id, l.environment, l.account_id, l.transaction_id, 'unfund:' || r.id, l.bucket, -l.amount
          from refused r join ledger_entries l on l.posting = 'fund:' || r.id
        returning transaction_id
      )
      update transactions t set data = t.data || '{"funding_status": "held"}'::jsonb, modified_at = now()
        from transfers f
       where f.transaction_id in (select id from refused) and f.entry_type = 'deposit'
         and t.id = f.assoc_transaction_id and t.data->>'funding_status' = 'funded';
      end if;`;

/** The statement trigger posting `process:` legs (and on updates `reverse:` and `unfund:` legs). */
function postLegs(name: string, withOld: boolean): string {
  const reverse = withOld ? `
        union all
        select 'reverse:' || n.id, n.id, n.org_id, n.environment, n.data->>'processing_id',
               -ledger_gross(n.type, (n.data->>'amount')::bigint), -coalesce((o.data->>'fee')::bigint, 0),
               case when o.data->>'funding_status' = 'pending' then 'pending' else 'available' end
          from new_rows n join old_rows o on o.id = n.id
         where o.data->>'status' = 'processed' and n.data->>'status' in ('voided', 'rejected')
           and o.data->>'funding_status' is not null` : '';
  return `
    create function ${name}() returns trigger language plpgsql as $$
    begin
      with postings as (
        select 'process:' || n.id as posting, n.id as transaction_id, n.org_id, n.environment,
               n.data->>'processing_id' as account_id,
               ledger_gross(n.type, (n.data->>'amount')::bigint) as gross, (n.data->>'fee')::bigint as fee, 'pending' as bucket
          from new_rows n ${withOld ? 'join old_rows o on o.id = n.id' : ''}
         where n.data->>'funding_status' = 'pending' ${withOld ? "and o.data->>'funding_status' is null" : ''}
        ${reverse}
      )
      insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
      select p.org_id, p.environment, p.account_id, p.transaction_id, p.posting, leg.bucket, leg.amount
        from postings p
        cross join lateral (values ('world', -p.gross), ('fees', p.fee), (p.bucket, p.gross - p.fee)) as leg(bucket, amount)
       where leg.amount <> 0 and p.account_id is not null;${withOld ? UNFUND : ''}
      -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
      perform graphile_worker.add_job('fund_instant', json_build_object('transaction_id', n.id), job_key => 'fund_instant:' || n.id)
         from new_rows n ${withOld ? 'join old_rows o on o.id = n.id' : ''}
        where n.data->>'funding_status' = 'pending' ${withOld ? "and o.data->>'funding_status' is null" : ''} and n.data->>'funding_timing' = 'instant';
      perform graphile_worker.add_job('sandbox_chargeback', json_build_object('transaction_id', n.id),
                                      run_at => now() + interval '1 second', job_key => 'chargeback:' || n.id)
         from new_rows n ${withOld ? 'join old_rows o on o.id = n.id' : ''}
        where n.data->>'funding_status' = 'pending' ${withOld ? "and o.data->>'funding_status' is null" : ''} and n.data->>'sandbox_chargeback' is not null;
      return null;
    end $$;`;
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists transactions_post_update on transactions;
    drop trigger if exists transactions_post_insert on transactions;
    drop trigger if exists transactions_funding_fields on transactions;
    drop trigger if exists transactions_funding_fields_update on transactions;
    drop function if exists transaction_post_inserted();
    drop function if exists transaction_post_updated();
    drop function if exists transaction_funding_fields();
    drop function if exists transaction_fee(text, text, bigint);
    drop function if exists ledger_gross(text, bigint);
    drop function if exists add_business_days(date, int);
    drop function if exists environment_date(text, text);
    drop index if exists transactions_funding_due;
    drop index if exists transactions_funding_due_any;
    drop table if exists ledger_entries;
    drop function if exists ledger_entries_immutable();
    drop function if exists ledger_entries_balanced();
  `);
}
