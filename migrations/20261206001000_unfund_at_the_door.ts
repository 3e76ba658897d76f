import type { Knex } from 'knex';

/**
 * A refused deposit's funded transactions are held again by the transaction family's update
 * (api/families/transactions/funding.ts: returnFundedToHeld, from the deposit's afterWrite), each
 * change audited with the actor of the work that refused it, in the same database transaction as
 * the deposit's change. The statement trigger on updated transactions keeps the ledger's part: it
 * posts `process:` and `reverse:` legs, the `unfund:` mirror of a refused deposit's or
 * withdrawal's `fund:` posting, and adds the instant-funding and sandbox chargeback jobs; it no
 * longer updates any transaction.
 */
const LEDGER_LEGS = `
      with postings as (
        select 'process:' || n.id as posting, n.id as transaction_id, n.org_id, n.environment,
               n.data->>'processing_id' as account_id,
               ledger_gross(n.type, (n.data->>'amount')::bigint) as gross, (n.data->>'fee')::bigint as fee, 'pending' as bucket
          from new_rows n join old_rows o on o.id = n.id
         where n.data->>'funding_status' = 'pending' and o.data->>'funding_status' is null
        union all
        select 'reverse:' || n.id, n.id, n.org_id, n.environment, n.data->>'processing_id',
               -ledger_gross(n.type, (n.data->>'amount')::bigint), -coalesce((o.data->>'fee')::bigint, 0),
               case when o.data->>'funding_status' = 'pending' then 'pending' else 'available' end
          from new_rows n join old_rows o on o.id = n.id
         where o.data->>'status' = 'processed' and n.data->>'status' in ('voided', 'rejected')
           and o.data->>'funding_status' is not null
      )
      insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
      select p.org_id, p.environment, p.account_id, p.transaction_id, p.posting, leg.bucket, leg.amount
        from postings p
        cross join lateral (values ('world', -p.gross), ('fees', p.fee), (p.bucket, p.gross - p.fee)) as leg(bucket, amount)
       where leg.amount <> 0 and p.account_id is not null;`;

/** A deposit or withdrawal the bank refuses (or that is voided) once under way. */
const REFUSED = `select n.id from new_rows n join old_rows o on o.id = n.id
         where n.type in ('deposit', 'withdraw') and o.data->>'status' in ('processing', 'processed')
           and n.data->>'status' in ('rejected', 'voided')`;

const UNFUND_LEGS = `
        insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
        select l.org_id, l.environment, l.account_id, l.transaction_id, 'unfund:' || r.id, l.bucket, -l.amount
          from refused r join ledger_entries l on l.posting = 'fund:' || r.id`;

const JOBS = `
      -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
      perform graphile_worker.add_job('fund_instant', json_build_object('transaction_id', n.id), job_key => 'fund_instant:' || n.id)
         from new_rows n join old_rows o on o.id = n.id
        where n.data->>'funding_status' = 'pending' and o.data->>'funding_status' is null and n.data->>'funding_timing' = 'instant';
      perform graphile_worker.add_job('sandbox_chargeback', json_build_object('transaction_id', n.id),
                                      run_at => now() + interval '1 second', job_key => 'chargeback:' || n.id)
         from new_rows n join old_rows o on o.id = n.id
        where n.data->>'funding_status' = 'pending' and o.data->>'funding_status' is null and n.data->>'sandbox_chargeback' is not null;`;

const postUpdated = (unfund: string) => `
    create or replace function transaction_post_updated() returns trigger language plpgsql as $$
    begin${LEDGER_LEGS}${unfund}${JOBS}
      return null;
    end $$;`;

/** The refused release's `unfund:` legs; its funded transactions are the family's to hold again. */
const UNFUND_LEGS_ONLY = postUpdated(`
      with refused as (
        ${REFUSED}
      )${UNFUND_LEGS};`);

/**
 * As before: the `unfund:` legs, and the funded transactions held again by the trigger's own
 * update, guarded by `if exists` (a statement trigger fires for every statement, so an unguarded
 * update here would set itself off again without end).
 */
const UNFUND_AND_HOLD = postUpdated(`
      if exists (${REFUSED}) then
      with refused as (
        ${REFUSED}
      ), unfunded as (${UNFUND_LEGS}
        returning transaction_id
      )
      update transactions t set data = t.data || '{"funding_status": "held"}'::jsonb, modified_at = now()
        from transfers f
       where f.transaction_id in (select id from refused) and f.entry_type = 'deposit'
         and t.id = f.assoc_transaction_id and t.data->>'funding_status' = 'funded';
      end if;`);

export async function up(knex: Knex): Promise<void> {
  await knex.raw(UNFUND_LEGS_ONLY);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(UNFUND_AND_HOLD);
}
