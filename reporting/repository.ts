/**
 * SQL of the reporting process beyond the change feed (reporting/feed.ts) and the mirror's own
 * ClickHouse tables (reporting/store.ts): in Postgres, the followers of the feed and its pruning
 * (tables: migrations/…_reporting_prune.ts), the wake-up a standby sends, and the leader lock's
 * statements on its own dedicated connection; in ClickHouse, running a compiled report.
 */
import type pg from 'pg';
import { rows, type Db } from '../api/db/connection.ts';
import type { CompiledReport } from './report.ts';
import type { ReportingStore } from './store.ts';

/** Records `follower`'s durable xmin (text form of an xid8), made or moved. */
export async function upsertFollower(db: Db, follower: string, xmin: string): Promise<void> {
  await rows(db,
    `insert into reporting_followers (target, position_xmin, seen_at) values (?, ?::xid8, now())
     on conflict (target) do update set position_xmin = excluded.position_xmin, seen_at = now()`,
    [follower, xmin]);
}

/**
 * One statement: records `follower`'s durable xmin, raises `reporting_pruned.below` to the bound
 * (the lowest durable xmin of every follower heard from within `forgottenAfterMs`), and deletes up
 * to `limit` change rows below it, skipping rows a writer holds. Returns how many it deleted.
 *
 * The rows are deleted by their row address (a TID scan), not joined back by key: with a backlog,
 * a join lets the planner hash every row below the bound for each batch (0.75 s per batch of 5,000
 * with 1M rows behind, against 25 ms this way).
 * A locked row cannot move, so its address still names it when the delete reaches it.
 */
export async function pruneChangesBelowFollowers(db: Db, follower: string, xmin: string, forgottenAfterMs: number, limit: number): Promise<number> {
  const [row] = await rows<{ deleted: number }>(db,
    `with follower as (
       insert into reporting_followers (target, position_xmin, seen_at) values (?, ?::xid8, now())
       on conflict (target) do update set position_xmin = excluded.position_xmin, seen_at = now()
       returning 1),
     bound as (
       select least(?::xid8, (select position_xmin from reporting_followers
                               where target <> ? and seen_at > now() - make_interval(secs => ? / 1000.0)
                               order by position_xmin limit 1)) as below),
     raised as (
       update reporting_pruned p set below = greatest(p.below, bound.below) from bound returning 1),
     deleted as (
       delete from reporting_changes c using bound
        where c.ctid = any(array(select d.ctid from reporting_changes d, bound b
                                  where d.txid < b.below limit ? for update of d skip locked))
          and c.txid < bound.below
        returning 1)
     select (select count(*) from deleted)::int as deleted, (select count(*) from follower) + (select count(*) from raised) as noted`,
    [follower, xmin, xmin, follower, forgottenAfterMs, limit]);
  return Number(row.deleted);
}

/** Sends `payload` to whoever LISTENs on `channel` (the leader), once this transaction commits. */
export async function notifyChannel(db: Db, channel: string, payload: string): Promise<void> {
  await rows(db, 'select pg_notify(?, ?)', [channel, payload]);
}

/** One attempt at the session-level advisory lock `keys` on this connection; true when taken. */
export async function tryAdvisoryLock(client: pg.Client, keys: [number, number]): Promise<boolean> {
  const result = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, $2) as locked', keys);
  return result.rows[0].locked;
}

/** Subscribes this connection to `channel` (a fixed identifier of ours, never user input). */
export async function listenOn(client: pg.Client, channel: string): Promise<void> {
  await client.query(`listen ${channel}`);
}

/** A round trip on this connection: throws when it is gone. */
export async function pingConnection(client: pg.Client): Promise<void> {
  await client.query('select 1');
}

/** Runs a compiled report (reporting/report.ts, every value bound) on the mirror: ClickHouse's rows, not yet decoded. */
export async function selectReport(store: ReportingStore, compiled: CompiledReport): Promise<Array<Record<string, unknown>>> {
  return store.select<Record<string, unknown>>(compiled.sql, compiled.params);
}
