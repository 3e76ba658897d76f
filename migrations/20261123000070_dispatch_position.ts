import type { Knex } from 'knex';

/**
 * Webhook dispatch follows the events outbox behind a snapshot position, as the reporting mirror
 * follows its change feed, instead of marking each event dispatched. Marking cost an update per
 * event (a new version of the row, written into every index of `events`, plus the dead version
 * left for vacuum); the position is one small row updated once per batch.
 *
 * `events.txid` is the writing transaction. `dispatched` is a snapshot: every event visible in it
 * has its deliveries. A pass reads the events not visible in `dispatched` that are visible in a
 * newer snapshot (the window), in (txid, seq) order, and when it has taken them all the window
 * becomes `dispatched`. A transaction that commits late was in progress at the window, so it
 * falls in a later window: none is skipped. A window too large for one batch is taken in pages,
 * `window_after` being the last (txid, seq) taken; its rows are all committed, so the pages are
 * exact.
 *
 * Events written before this migration keep a null txid: the dispatched ones are history, and
 * the ones still waiting are given this migration's transaction, which the first position leaves
 * undispatched. `dispatched_at` is no longer written.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table events add column txid xid8;
    update events set txid = pg_current_xact_id() where dispatched_at is null;
    alter table events alter column txid set default pg_current_xact_id();
    create index events_dispatch_order on events (txid, seq) where txid is not null;
    drop index events_undispatched;

    create table webhook_dispatch_position (
      singleton boolean primary key default true check (singleton),
      dispatched pg_snapshot not null,
      window_snapshot pg_snapshot,
      window_after_txid xid8,
      window_after_seq bigint
    );

    -- Now, with this transaction still in progress: the events it gave a txid are not dispatched.
    -- (Our own xid is left out of our own snapshot's in-progress list, so it is added.)
    with now_seen as (select pg_current_snapshot() as s, pg_current_xact_id() as me),
         open as (select x from now_seen, pg_snapshot_xip(s) as x
                  union select me from now_seen where me < pg_snapshot_xmax(s))
    insert into webhook_dispatch_position (dispatched)
    select (coalesce((select min(x) from open), pg_snapshot_xmax(s))::text || ':' || pg_snapshot_xmax(s)::text || ':'
            || coalesce((select string_agg(x::text, ',' order by x) from open), ''))::pg_snapshot
      from now_seen;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    update events e set dispatched_at = now()
      from webhook_dispatch_position p
     where e.dispatched_at is null and e.txid is not null
       and (pg_visible_in_snapshot(e.txid, p.dispatched)
            or (p.window_snapshot is not null and pg_visible_in_snapshot(e.txid, p.window_snapshot)
                and (e.txid, e.seq) <= (p.window_after_txid, p.window_after_seq)));
    drop table webhook_dispatch_position;
    create index events_undispatched on events (seq) where dispatched_at is null;
    drop index events_dispatch_order;
    alter table events drop column txid;
  `);
}
