import type { Knex } from 'knex';

/**
 * No database function writes events. A transaction's operation rows and their
 * `transaction:operation` events are written by the writer that changes the transaction
 * (api/families/transaction_operations/repository.ts, called by the payment's statement, the
 * create and update service and the worker's transitions), and the intent a client token
 * finishes is finished, with its `intent:status` event, where the token is spent
 * (api/families/intents/tokenSpend.ts): both through the one event writer, api/db/events.ts.
 * test/repository/event-writers.test.ts fails when a database function inserts into `events`.
 *
 * `down` restores the triggers and the complete text of their functions as they were.
 */
const TRIGGERS_DOWN = `
  create trigger transaction_operations_insert after insert on transactions
    referencing new table as new_rows for each statement execute function transaction_note_inserted_operations();
  create trigger transaction_operations_update after update on transactions
    referencing old table as old_rows new table as new_rows for each statement execute function transaction_note_updated_operations();
  create trigger access_tokens_finish_intent after update of uses on access_tokens
    for each row when (old.uses = 0 and new.uses > 0) execute function finish_intent_of_spent_token();
`;

/** The operations trigger's function as it was, for the steps of inserted or of updated rows. */
function operationsTrigger(name: string, steps: string): string {
  return `create or replace function ${name}() returns trigger language plpgsql as $$
    declare
      noted bigint;
    begin
      with steps as (
        select n.id as transaction_id, n.org_id, n.environment, n.data->'amount' as amount,
               ${steps}
      ), operations as (
        insert into transaction_operations (id, org_id, environment, type, data)
        select 'op_' || replace(gen_random_uuid()::text, '-', ''), org_id, environment, op,
               jsonb_build_object('transaction_id', transaction_id, 'amount', amount,
                                  'status', case when op = 'decline' then 'failed' else 'complete' end)
          from steps where op is not null
        returning id, org_id, environment, type, data
      ), evented as (
        insert into events (id, org_id, environment, trigger, object_type, object_id, value)
        select new_object_id('evt'), org_id, environment, 'transaction:operation', 'transaction',
               data->>'transaction_id',
               jsonb_build_object('object', 'transaction_operation', 'id', id, 'type', type, 'status', data->>'status', 'amount', round((data->>'amount')::numeric / 100, 2))
          from operations
        returning 1
      )
      select count(*) into noted from evented;
      if noted > 0 then
        -- The same shard as the transaction's other events (api/db/events.ts): one job row per transaction.
        null; -- the dispatcher follows the outbox on its own (migration 20261123000080)
      end if;
      return null;
    end $$;`;
}

const FUNCTIONS_DOWN = `
${operationsTrigger('transaction_note_inserted_operations', `transaction_operation_type(n.type, null, n.data->>'status') as op
          from new_rows n `)}
${operationsTrigger('transaction_note_updated_operations', `transaction_operation_type(n.type, o.data->>'status', n.data->>'status') as op
          from new_rows n join old_rows o on o.id = n.id`)}
create or replace function finish_intent_of_spent_token() returns trigger language plpgsql as $$
    declare
      finished text;
    begin
      update intents set data = jsonb_set(data, '{status}', '"finished"'), modified_at = now()
       where tenant_key(org_id, environment) = tenant_key(new.org_id, new.environment)
         and org_id = new.org_id and environment = new.environment
         and data->>'token_hash' = encode(new.token_hash, 'hex') and data->>'status' = 'pending'
      returning id into finished;
      if finished is not null then
        insert into events (id, org_id, environment, trigger, object_type, object_id, value)
        values (new_object_id('evt'), new.org_id, new.environment, 'intent:status', 'intent', finished,
                jsonb_build_object('status', 'finished', 'previous_status', 'pending'));
        null; -- the dispatcher follows the outbox on its own (migration 20261123000080)
      end if;
      return new;
    end $$;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger transaction_operations_insert on transactions;
    drop trigger transaction_operations_update on transactions;
    drop trigger access_tokens_finish_intent on access_tokens;
    drop function transaction_note_inserted_operations();
    drop function transaction_note_updated_operations();
    drop function finish_intent_of_spent_token();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(FUNCTIONS_DOWN);
  await knex.raw(TRIGGERS_DOWN);
}
