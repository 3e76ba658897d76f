import type { Knex } from 'knex';

/**
 * An object's history (`GET /audit_events?object_id=…`, the console's History on every object
 * page) and a request's changes (`?request_id=…`, the console's Requests view) are read through
 * indexes on the expressions the list API's query compiler writes, `data #>> '{object_id}'` and
 * `data #>> '{request_id}'`: the planner matches an index only to its own expression, and those
 * lookups scanned the tenant's every event past indexes on `data->>'…'`, which only made each
 * event's write dearer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index audit_events_by_object;
    drop index audit_events_by_request;
    create index audit_events_by_object on audit_events ((data #>> '{object_id}'), created_at);
    create index audit_events_by_request on audit_events ((data #>> '{request_id}'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index audit_events_by_object;
    drop index audit_events_by_request;
    create index audit_events_by_object on audit_events ((data->>'object_id'), created_at);
    create index audit_events_by_request on audit_events ((data->>'request_id'));
  `);
}
