import type { Knex } from 'knex';
import { createFamilyTable } from './support/familyTable.ts';

/**
 * The audit history (CONTRACT §20): every change to an object an integrator or operator owns
 * appends one `audit_events` row from a trigger on the object's table, so it commits or rolls back
 * with the change whatever path made it (API, console, CLI, worker, a database function). Who acted
 * comes from the transaction-local setting `settle.audit` (api/db/audit.ts), `{actor, request_id,
 * ip}`; a change made without one is the system's.
 *
 * Only what the stored row already shows enters the history: stored rows hold card, account and
 * tax numbers masked, and their sealed copies, key hashes and secrets are dropped here. The table
 * refuses updates, deletes and truncation; the retention function is the one way rows leave.
 * A test-data reset records no per-row deletes (it empties a whole test environment at once).
 */
const AUDITED: Array<[table: string, objectType: string]> = [
  ['accounts', 'account'],
  ['billing_charges', 'billing_charge'],
  ['billing_schedules', 'billing_schedule'],
  ['entities', 'entity'],
  ['intents', 'intent'],
  ['invoice_items', 'invoice_item'],
  ['invoices', 'invoice'],
  ['payment_activations', 'payment_activation'],
  ['payment_links', 'payment_link'],
  ['payment_methods', 'payment_method'],
  ['stakeholders', 'stakeholder'],
  ['transactions', 'transaction'],
  ['webhooks', 'webhook'],
  ['api_keys', 'api_key'],
];

export async function up(knex: Knex): Promise<void> {
  // Shaped like every family table, so GET /audit_events lists through the generic engine.
  await createFamilyTable(knex, {
    table: 'audit_events',
    types: ['audit_event'],
    indexes: { object: { on: "(data->>'object_id'), created_at" }, request: { on: "(data->>'request_id')" } },
  });
  await knex.raw(`
    -- Secrets never enter the history: sealed copies, hashes, card codes, secrets, fingerprints.
    create function audit_scrub(value jsonb) returns jsonb language plpgsql immutable as $$
    declare
      k text;
      v jsonb;
      kept jsonb := '{}';
    begin
      if value::text !~* '(sealed|secret|hash|password|card_code|fingerprint)' then return value; end if;
      if jsonb_typeof(value) = 'array' then
        return (select coalesce(jsonb_agg(audit_scrub(e) order by n), '[]') from jsonb_array_elements(value) with ordinality as a(e, n));
      end if;
      if jsonb_typeof(value) <> 'object' then return value; end if;
      for k, v in select * from jsonb_each(value) loop
        if k !~* '(sealed|secret|hash|password|card_code|fingerprint)' then kept := kept || jsonb_build_object(k, audit_scrub(v)); end if;
      end loop;
      return kept;
    end $$;

    -- A stored row as the fields a history compares: its columns but the bookkeeping ones, and its data.
    create function audit_fields(r jsonb) returns jsonb language sql immutable return
      audit_scrub((r - 'id' - 'org_id' - 'environment' - 'created_at' - 'modified_at' - 'data' - 'key_hash' - 'txid')
                  || coalesce(r->'data', '{}'));

    create function audit_changes(before jsonb, after jsonb) returns jsonb language sql immutable return (
      select coalesce(jsonb_object_agg(key, jsonb_build_array(b.value, a.value)), '{}')
        from jsonb_each(coalesce(before, '{}')) b full join jsonb_each(coalesce(after, '{}')) a using (key)
       where coalesce(b.value, 'null') is distinct from coalesce(a.value, 'null'));

    -- A change of status is named as the step it is (capture, void, disable, …); anything else is an update.
    create function audit_action(object_type text, kind text, old_status text, new_status text) returns text
      language sql immutable return case
        when old_status is not distinct from new_status then 'update'
        when object_type = 'transaction' then coalesce(transaction_operation_type(kind, old_status, new_status), 'update')
        when new_status = 'disabled' then 'disable'
        when new_status = 'active' and old_status = 'disabled' then 'enable'
        when new_status in ('canceled', 'cancelled') then 'cancel'
        when new_status = 'expired' then 'expire'
        when new_status = 'verified' then 'verify'
        when new_status = 'paid' then 'pay'
        else 'update'
      end;

    create type audit_context_row as (actor jsonb, request_id text, ip text);
    create function audit_context() returns audit_context_row language sql stable as $$
      select coalesce(c->'actor', '{"type": "system"}'), c->>'request_id', c->>'ip'
        from (select coalesce(nullif(current_setting('settle.audit', true), ''), '{}')::jsonb as c) s $$;

    create function audit_id() returns text language sql volatile return 'aud_' || replace(gen_random_uuid()::text, '-', '');

    create function audit_data(c audit_context_row, action text, object_type text, object_id text, changes jsonb) returns jsonb
      language sql immutable return jsonb_build_object('actor', c.actor, 'action', action, 'object_type', object_type,
        'object_id', object_id, 'changes', changes, 'request_id', c.request_id, 'ip', c.ip);

    create function audit_note_changes() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        insert into audit_events (id, org_id, environment, data)
        select audit_id(), n.org_id, n.environment,
               audit_data(c, 'create', tg_argv[0], n.id, audit_changes(null, audit_fields(to_jsonb(n))))
          from new_rows n, audit_context() c;
      elsif tg_op = 'UPDATE' then
        insert into audit_events (id, org_id, environment, data)
        select audit_id(), d.org_id, d.environment,
               audit_data(c, audit_action(tg_argv[0], d.kind, d.old_status, d.new_status), tg_argv[0], d.id, d.changes)
          from (select n.org_id, n.environment, n.id, to_jsonb(n)->>'type' as kind,
                       to_jsonb(o)->'data'->>'status' as old_status, to_jsonb(n)->'data'->>'status' as new_status,
                       audit_changes(audit_fields(to_jsonb(o)), audit_fields(to_jsonb(n))) as changes
                  from new_rows n join old_rows o on o.id = n.id) d, audit_context() c
         where d.changes <> '{}';
      elsif current_setting('settle.test_data_reset', true) is null or current_setting('settle.test_data_reset', true) = '' then
        insert into audit_events (id, org_id, environment, data)
        select audit_id(), o.org_id, o.environment,
               audit_data(c, 'delete', tg_argv[0], o.id, audit_changes(audit_fields(to_jsonb(o)), null))
          from old_rows o, audit_context() c;
      end if;
      return null;
    end $$;

    create function audit_events_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' and current_setting('settle.audit_prune', true) = 'on' then return old; end if;
      raise exception 'audit events are append-only' using errcode = 'P0001';
    end $$;
    create trigger audit_events_append_only before update or delete on audit_events
      for each row execute function audit_events_append_only();
    create trigger audit_events_no_truncate before truncate on audit_events
      for each statement execute function audit_events_append_only();

    -- Retention: the one path by which audit events leave, a bounded batch of the oldest at a time.
    create function prune_audit_events(older_than timestamptz, batch int) returns int language plpgsql as $$
    declare
      deleted int;
    begin
      perform set_config('settle.audit_prune', 'on', true);
      delete from audit_events where id in (select id from audit_events where created_at < older_than limit batch);
      get diagnostics deleted = row_count;
      perform set_config('settle.audit_prune', '', true);
      return deleted;
    end $$;
  `);
  for (const [table, objectType] of AUDITED) {
    await knex.raw(`
      create trigger ${table}_audit_insert after insert on ${table}
        referencing new table as new_rows for each statement execute function audit_note_changes('${objectType}');
      create trigger ${table}_audit_update after update on ${table}
        referencing old table as old_rows new table as new_rows for each statement execute function audit_note_changes('${objectType}');
      create trigger ${table}_audit_delete after delete on ${table}
        referencing old table as old_rows for each statement execute function audit_note_changes('${objectType}');
    `);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table] of AUDITED) {
    await knex.raw(`
      drop trigger ${table}_audit_insert on ${table};
      drop trigger ${table}_audit_update on ${table};
      drop trigger ${table}_audit_delete on ${table};
    `);
  }
  await knex.raw(`
    drop table audit_events;
    drop function prune_audit_events(timestamptz, int);
    drop function audit_events_append_only();
    drop function audit_note_changes();
    drop function audit_data(audit_context_row, text, text, text, jsonb);
    drop function audit_id();
    drop function audit_context();
    drop type audit_context_row;
    drop function audit_action(text, text, text, text);
    drop function audit_changes(jsonb, jsonb);
    drop function audit_fields(jsonb);
    drop function audit_scrub(jsonb);
  `);
}
