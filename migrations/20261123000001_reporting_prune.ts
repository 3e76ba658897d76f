import type { Knex } from 'knex';

/**
 * Pruning the reporting change feed (reporting/prune.ts).
 *
 * `reporting_followers`: every ClickHouse target that follows `reporting_changes` (one per
 * leader-lock identity) says up to where its copy is durable: the xmin of the position recorded in
 * its ClickHouse. Change rows are pruned below the lowest of them, so one target never deletes
 * what another still has to copy. A target silent for long is no longer waited for.
 *
 * `reporting_pruned`: the highest bound anything was pruned below, raised in the same transaction
 * as each delete. A mirror whose recorded position is older (a forgotten target, a ClickHouse
 * restored from an old backup) would miss changes, so it rebuilds instead.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table reporting_followers (
      target text primary key,
      position_xmin xid8 not null,
      seen_at timestamptz not null default now()
    );

    create table reporting_pruned (
      only_row boolean primary key default true check (only_row),
      below xid8 not null
    );
    insert into reporting_pruned (below) values ('0');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table reporting_pruned, reporting_followers');
}
