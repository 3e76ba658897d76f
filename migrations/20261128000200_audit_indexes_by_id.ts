import type { Knex } from 'knex';

/**
 * The audit history's lookups by object (`object_id`, an object's history on its console page)
 * and by request (a request's audit events in the console's Requests view) are indexed on the id
 * alone, without the tenant key in front: an object's or a request's id names one tenant's rows
 * only, and the tenant condition is checked on the few rows the id finds. Each audit event's two
 * index entries are then about 70 bytes shorter, a tenth of the WAL an audit event writes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index audit_events_by_tenant_object;
    drop index audit_events_by_tenant_request;
    create index audit_events_by_object on audit_events ((data->>'object_id'), created_at);
    create index audit_events_by_request on audit_events ((data->>'request_id'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index audit_events_by_object;
    drop index audit_events_by_request;
    create index audit_events_by_tenant_object on audit_events (tenant_key(org_id, environment), (data->>'object_id'), created_at);
    create index audit_events_by_tenant_request on audit_events (tenant_key(org_id, environment), (data->>'request_id'));
  `);
}
