import type { Knex } from 'knex';

/**
 * A test environment's reset deletes its audit history with everything else (CONTRACT §21): the
 * one path besides retention by which audit events leave, and only a test environment's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function reset_audit_events(org text, env text) returns int language plpgsql as $$
    declare
      deleted int;
    begin
      if env is distinct from 'test' then raise exception 'only a test environment''s audit history can be reset'; end if;
      perform set_config('settle.audit_prune', 'on', true);
      delete from audit_events where org_id = org and environment = env;
      get diagnostics deleted = row_count;
      perform set_config('settle.audit_prune', '', true);
      return deleted;
    end $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function reset_audit_events(text, text)');
}
