import type { Knex } from 'knex';

/**
 * A statement that creates rows may write their audit events itself, in one more part of the same
 * statement (a card payment: `insertPayment` in api/families/transactions/repository.ts), instead
 * of leaving them to the audit trigger (migration 20261126000300). The trigger builds `changes` in
 * PL/pgSQL from the stored row (`to_jsonb`, scrubbing, `jsonb_each`) in a statement of its own;
 * the writer has the fields in hand and builds them for a fraction of that.
 *
 * - Such a statement sets `settle.audited_<table>` to its own `statement_timestamp()` before its
 *   rows of that table are inserted, and the table's insert trigger does not fire for a
 *   top-level statement that carries its own timestamp there (`pg_trigger_depth() = 0`: a
 *   statement a trigger runs inside it is audited as ever). The setting lasts the transaction
 *   but names one statement: any other statement in it, of the same transaction or not, is
 *   audited by the trigger. Updates and deletes are always the trigger's.
 * - `audit_created_changes(stored, sent, sent_keys, built)` gives the `changes` of such a row:
 *   `built` (the writer's, from the type and data it sent), and for any field the database added
 *   on the way in (a BEFORE trigger's, e.g. a payment's fee and funding date) the trigger's own
 *   computation; when the database changed or dropped a field that was sent, or nothing was
 *   built, the trigger's computation of the whole stored row. The envelope (actor, request id,
 *   address) is the trigger's `audit_data` over `audit_context_of` the setting the trigger reads.
 * - `audit_row_fields` is the one definition of which columns of a row are its fields, used by
 *   `audit_fields` (the trigger) and `audit_created_changes`; it deletes the bookkeeping keys in
 *   one pass (each `jsonb - text` rebuilds the whole value, nested data included) and is plain
 *   SQL, so PostgreSQL inlines it where it is called.
 * - `audit_changes` of a created or deleted row is one pass over its fields, without the join.
 *
 * The writer's builder (api/families/audit_events/statement.ts) and the trigger are compared on
 * the same changes by test/audit-statement.test.ts.
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

const FUNCTIONS_UP = `
  create function audit_row_fields(r jsonb) returns jsonb language sql immutable
    return (r - '{id,org_id,environment,created_at,modified_at,data,key_hash,txid}'::text[]) || coalesce(r->'data', '{}');

  create or replace function audit_fields(r jsonb) returns jsonb language plpgsql immutable as $$
  begin
    return audit_scrub(audit_row_fields(r));
  end $$;

  create or replace function audit_changes(before jsonb, after jsonb) returns jsonb language plpgsql immutable as $$
  begin
    if before is null then
      return (select coalesce(jsonb_object_agg(key, jsonb_build_array(null, value)), '{}') from jsonb_each(after) where value <> 'null');
    elsif after is null then
      return (select coalesce(jsonb_object_agg(key, jsonb_build_array(value, null)), '{}') from jsonb_each(before) where value <> 'null');
    end if;
    return (select coalesce(jsonb_object_agg(key, jsonb_build_array(b.value, a.value)), '{}')
              from jsonb_each(before) b full join jsonb_each(after) a using (key)
             where coalesce(b.value, 'null') is distinct from coalesce(a.value, 'null'));
  end $$;

  create function audit_context_of(setting text) returns audit_context_row language plpgsql stable as $$
  declare
    c jsonb := coalesce(nullif(setting, ''), '{}')::jsonb;
  begin
    return row(coalesce(c->'actor', '{"type": "system"}'), c->>'request_id', c->>'ip')::audit_context_row;
  end $$;

  create or replace function audit_context() returns audit_context_row language plpgsql stable as $$
  begin
    return audit_context_of(current_setting('settle.audit', true));
  end $$;

  -- stored: the created row (to_jsonb); sent: {type, data} as the writer sent them; sent_keys: the
  -- keys of their fields; built: the writer's changes of those fields, or null.
  create function audit_created_changes(stored jsonb, sent jsonb, sent_keys text[], built jsonb) returns jsonb
    language plpgsql immutable as $$
  declare
    have jsonb := audit_row_fields(stored);
    gave jsonb;
    added jsonb;
  begin
    if built is not null then
      gave := audit_row_fields(sent);
      if have = gave then return built; end if;
      added := have - sent_keys;
      -- The stored fields are exactly those sent (all named in sent_keys) and those added.
      if gave - sent_keys = '{}' and gave || added = have then
        return built || audit_changes(null, audit_scrub(added));
      end if;
    end if;
    return audit_changes(null, audit_scrub(have));
  end $$;
`;

const FUNCTIONS_DOWN = `
  drop function audit_created_changes(jsonb, jsonb, text[], jsonb);
  create or replace function audit_context() returns audit_context_row language plpgsql stable as $$
  declare
    c jsonb := coalesce(nullif(current_setting('settle.audit', true), ''), '{}')::jsonb;
  begin
    return row(coalesce(c->'actor', '{"type": "system"}'), c->>'request_id', c->>'ip')::audit_context_row;
  end $$;
  drop function audit_context_of(text);
  create or replace function audit_changes(before jsonb, after jsonb) returns jsonb language plpgsql immutable as $$
  begin
    return (select coalesce(jsonb_object_agg(key, jsonb_build_array(b.value, a.value)), '{}')
              from jsonb_each(coalesce(before, '{}')) b full join jsonb_each(coalesce(after, '{}')) a using (key)
             where coalesce(b.value, 'null') is distinct from coalesce(a.value, 'null'));
  end $$;
  create or replace function audit_fields(r jsonb) returns jsonb language plpgsql immutable as $$
  begin
    return audit_scrub((r - 'id' - 'org_id' - 'environment' - 'created_at' - 'modified_at' - 'data' - 'key_hash' - 'txid')
                       || coalesce(r->'data', '{}'));
  end $$;
  drop function audit_row_fields(jsonb);
`;

function insertTrigger(table: string, objectType: string, skipOwnStatement: boolean): string {
  const when = skipOwnStatement
    ? `when (pg_trigger_depth() > 0 or current_setting('settle.audited_${table}', true) is distinct from statement_timestamp()::text)`
    : '';
  return `
    drop trigger ${table}_audit_insert on ${table};
    create trigger ${table}_audit_insert after insert on ${table}
      referencing new table as new_rows for each statement ${when} execute function audit_note_changes('${objectType}');`;
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(FUNCTIONS_UP);
  for (const [table, objectType] of AUDITED) await knex.raw(insertTrigger(table, objectType, true));
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, objectType] of AUDITED) await knex.raw(insertTrigger(table, objectType, false));
  await knex.raw(FUNCTIONS_DOWN);
}
