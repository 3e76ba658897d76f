import type { Knex } from 'knex';

/**
 * Intents (`/intents`) and payment activations (`/payment_activations`): family tables, tenant
 * indexed. An element intent is finished when its client token is spent: the trigger on
 * access_tokens marks it and writes its `intent:status` event (with the dispatch job) in the
 * very transaction that spent the token, the outbox rule of every other state change.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table intents (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index intents_by_tenant_created on intents (tenant_key(org_id, environment), created_at, id);
    create index intents_by_tenant_token on intents (tenant_key(org_id, environment), (data->>'token_hash'));

    create table payment_activations (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null default 'payment_activation',
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index payment_activations_by_tenant_created on payment_activations (tenant_key(org_id, environment), created_at, id);

    create function finish_intent_of_spent_token() returns trigger language plpgsql as $$
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
        values ('evt_' || replace(gen_random_uuid()::text, '-', ''), new.org_id, new.environment, 'intent:status', 'intent', finished,
                jsonb_build_object('status', 'finished', 'previous_status', 'pending'));
        perform graphile_worker.add_job('dispatch_events', '{}'::json, job_key => 'dispatch:' || (pg_current_xact_id()::text::bigint % 32), job_key_mode => 'preserve_run_at');
      end if;
      return new;
    end $$;
    create trigger access_tokens_finish_intent after update of uses on access_tokens
      for each row when (old.uses = 0 and new.uses > 0) execute function finish_intent_of_spent_token();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists access_tokens_finish_intent on access_tokens;
    drop function if exists finish_intent_of_spent_token();
    drop table payment_activations, intents;
  `);
}
