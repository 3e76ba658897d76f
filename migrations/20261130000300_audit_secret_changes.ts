import type { Knex } from 'knex';

/**
 * A change to a secret is audited with its value redacted. `audit_scrub` drops secret keys
 * (sealed copies, hashes, secrets, card codes, fingerprints) before changes are compared, so an
 * update that touched only a secret (a webhook's `sender_secret`, its OAuth `client_secret`) left
 * no audit event. `audit_secret_changes` compares the unscrubbed fields and names each secret that
 * changed, at its dotted path (`oauth_params.client_secret_sealed`), as `[before, after]` with
 * each side `"[redacted]"`, or null when there was none. The update branch of the audit trigger
 * adds those to the scrubbed changes; creates and deletes keep naming only their other fields.
 *
 * `audit_note_changes` is written out whole: this is its complete current text.
 */
const SECRET_CHANGES = `
  create function audit_secret_changes(before jsonb, after jsonb, prefix text) returns jsonb language plpgsql immutable as $$
  declare
    pattern constant text := '(sealed|secret|hash|password|card_code|fingerprint)';
    found jsonb := '{}';
    k text;
    b jsonb;
    a jsonb;
  begin
    if before is not distinct from after then return found; end if;
    if coalesce(before::text, '') !~* pattern and coalesce(after::text, '') !~* pattern then return found; end if;
    if jsonb_typeof(before) is distinct from 'object' and jsonb_typeof(after) is distinct from 'object' then return found; end if;
    for k, b, a in
      select key, o.value, n.value
        from jsonb_each(case when jsonb_typeof(before) = 'object' then before else '{}' end) o
        full join jsonb_each(case when jsonb_typeof(after) = 'object' then after else '{}' end) n using (key)
    loop
      continue when coalesce(b, 'null') = coalesce(a, 'null');
      if k ~* pattern then
        found := found || jsonb_build_object(prefix || k, jsonb_build_array(
          case when coalesce(b, 'null') = 'null' then null else '"[redacted]"'::jsonb end,
          case when coalesce(a, 'null') = 'null' then null else '"[redacted]"'::jsonb end));
      else
        found := found || audit_secret_changes(b, a, prefix || k || '.');
      end if;
    end loop;
    return found;
  end $$;
`;

function noteChanges(updateChanges: string): string {
  return `
  create or replace function audit_note_changes() returns trigger language plpgsql as $$
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
                     ${updateChanges} as changes
                from new_rows n join old_rows o on o.id = n.id) d, audit_context() c
       where d.changes <> '{}';
    elsif current_setting('settle.test_data_reset', true) is null or current_setting('settle.test_data_reset', true) = '' then
      insert into audit_events (id, org_id, environment, data)
      select audit_id(), o.org_id, o.environment,
             audit_data(c, 'delete', tg_argv[0], o.id, audit_changes(audit_fields(to_jsonb(o)), null))
        from old_rows o, audit_context() c;
    end if;
    return null;
  end $$;`;
}

const SCRUBBED = 'audit_changes(audit_fields(to_jsonb(o)), audit_fields(to_jsonb(n)))';
const WITH_SECRETS = `${SCRUBBED} || audit_secret_changes(audit_row_fields(to_jsonb(o)), audit_row_fields(to_jsonb(n)), '')`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(SECRET_CHANGES);
  await knex.raw(noteChanges(WITH_SECRETS));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(noteChanges(SCRUBBED));
  await knex.raw('drop function audit_secret_changes(jsonb, jsonb, text)');
}
