import type { Knex } from 'knex';

/**
 * Transaction operations (CONTRACT §14): one row per step of a transaction — authorize, process,
 * capture, void, refund, decline, reject — written by a trigger on `transactions`, so every write
 * path (API, worker transitions, billing runs) records its steps in the same database transaction
 * as the change, together with a `transaction:operation` event in the outbox and the shard's
 * dispatch job (as api/db/events.ts does). Funding steps (`fund`, `clear`, `chargeback`) join when
 * funding runs exist.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table transaction_operations (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default clock_timestamp(),
      modified_at timestamptz not null default clock_timestamp()
    );
    create index transaction_operations_by_tenant_created on transaction_operations (tenant_key(org_id, environment), created_at, id);
    create index transaction_operations_transaction on transaction_operations ((data->>'transaction_id'), created_at);

    create function transaction_operation_type(kind text, old_status text, new_status text) returns text
      language sql immutable return case
        when old_status is not distinct from new_status then null
        when new_status = 'declined' then 'decline'
        when new_status = 'authorized' then 'authorize'
        when new_status = 'processed' and old_status = 'authorized' then 'capture'
        when new_status = 'processed' and kind = 'refund' then 'refund'
        when new_status = 'processed' then 'process'
        when new_status = 'voided' then 'void'
        when new_status = 'rejected' then 'reject'
        else null
      end;

  `);
  await knex.raw(noteOperations('transaction_note_inserted_operations', false));
  await knex.raw(noteOperations('transaction_note_updated_operations', true));
  await knex.raw(`
    create trigger transaction_operations_insert after insert on transactions
      referencing new table as new_rows for each statement execute function transaction_note_inserted_operations();
    create trigger transaction_operations_update after update on transactions
      referencing old table as old_rows new table as new_rows for each statement execute function transaction_note_updated_operations();
  `);
}

/** The trigger body for inserts (no previous status) or updates (joined to the old rows). */
function noteOperations(name: string, withOld: boolean): string {
  return `
    create function ${name}() returns trigger language plpgsql as $$
    declare
      noted bigint;
    begin
      with steps as (
        select n.id as transaction_id, n.org_id, n.environment, n.data->'amount' as amount,
               transaction_operation_type(n.type, ${withOld ? "o.data->>'status'" : 'null'}, n.data->>'status') as op
          from new_rows n ${withOld ? 'join old_rows o on o.id = n.id' : ''}
      ), operations as (
        insert into transaction_operations (id, org_id, environment, type, data)
        select 'op_' || replace(gen_random_uuid()::text, '-', ''), org_id, environment, op,
               jsonb_build_object('transaction_id', transaction_id, 'amount', amount,
                                  'status', case when op = 'decline' then 'failed' else 'complete' end)
          from steps where op is not null
        returning id, org_id, environment, type, data
      ), evented as (
        insert into events (id, org_id, environment, trigger, object_type, object_id, value)
        select 'evt_' || replace(gen_random_uuid()::text, '-', ''), org_id, environment, 'transaction:operation', 'transaction',
               data->>'transaction_id',
               jsonb_build_object('object', 'transaction_operation', 'id', id, 'type', type, 'status', data->>'status', 'amount', data->'amount')
          from operations
        returning 1
      )
      select count(*) into noted from evented;
      if noted > 0 then
        -- The same shard as the transaction's other events (api/db/events.ts): one job row per transaction.
        perform graphile_worker.add_job('dispatch_events', '{}'::json,
          job_key => 'dispatch:' || (pg_current_xact_id()::text::bigint % 32), job_key_mode => 'preserve_run_at');
      end if;
      return null;
    end $$;`;
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists transaction_operations_update on transactions;
    drop trigger if exists transaction_operations_insert on transactions;
    drop function if exists transaction_note_inserted_operations();
    drop function if exists transaction_note_updated_operations();
    drop function if exists transaction_operation_type(text, text, text);
    drop table if exists transaction_operations;
  `);
}
