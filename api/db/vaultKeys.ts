/** SQL of `vault_keys` and of re-sealing stored values under a new vault key. */
import { ownAuditSql } from './auditStatement.ts';
import { rows, type Db } from './connection.ts';

export interface RecordedVaultKey {
  id: string;
  state: 'active' | 'next' | 'retired';
}

export async function recordedVaultKeys(db: Db): Promise<RecordedVaultKey[]> {
  return rows<RecordedVaultKey>(db, `select id, state from vault_keys where state <> 'retired' order by created_at`, []);
}

/** Records a key in a state unless one already holds that state (or the key is known): true when recorded. */
export async function recordVaultKey(db: Db, id: string, state: 'active' | 'next'): Promise<boolean> {
  const inserted = await rows(db, `insert into vault_keys (id, state) values (?, ?) on conflict do nothing returning id`, [id, state]);
  return inserted.length === 1;
}

/** The end of a rotation, in one transaction: the next key becomes the active one. */
export async function promoteNextVaultKey(db: Db, nextId: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.raw(`update vault_keys set state = 'retired', retired_at = now() where state = 'active'`);
    await tx.raw(`update vault_keys set state = 'active' where id = ? and state = 'next'`, [nextId]);
  });
}

/** A table whose json column may hold sealed values, and the columns that name one of its rows. */
export interface SealedColumn {
  table: string;
  column: string;
  key: string[];
}

export const SEALED_COLUMNS: SealedColumn[] = [
  { table: 'payment_methods', column: 'data', key: ['id'] },
  { table: 'entities', column: 'data', key: ['id'] },
  { table: 'stakeholders', column: 'data', key: ['id'] },
  { table: 'accounts', column: 'data', key: ['id'] },
  { table: 'webhooks', column: 'data', key: ['id'] },
  { table: 'idempotency_keys', column: 'response_body', key: ['org_id', 'environment', 'key'] },
];

export interface SealedRow {
  key: string[];
  value: unknown;
}

/** The next rows after `after` (keyset order) whose column holds text that looks sealed. */
export async function rowsWithSealedValues(db: Db, source: SealedColumn, after: string[] | null, limit: number): Promise<SealedRow[]> {
  const keyList = source.key.join(', ');
  const placeholders = source.key.map(() => '?').join(', ');
  const found = await rows<Record<string, unknown>>(db,
    `select ${keyList}, ${source.column} as value from ${source.table}
      where ${source.column}::text ~ '"v[12]\\.' ${after ? `and (${keyList}) > (${placeholders})` : ''}
      order by ${keyList} limit ?`,
    [...(after ?? []), limit]);
  return found.map((row) => ({ key: source.key.map((k) => String(row[k])), value: row.value }));
}

/**
 * Writes a re-sealed value only if the row still holds what was read (a concurrent change wins).
 * A re-seal is no change of the object: the same plaintext under another key, no field the API
 * shows or the audit names (a sealed copy is named only as "[redacted]" on both sides) is
 * different. So it is not audited: the statement marks the table as audited by itself, and the
 * table's audit trigger leaves it alone (migration 20261204000100), while it writes no event.
 */
export async function replaceSealedValue(db: Db, source: SealedColumn, key: string[], before: unknown, after: unknown): Promise<boolean> {
  const match = source.key.map((k) => `${k} = ?`).join(' and ');
  const updated = await rows(db,
    `update ${source.table} set ${source.column} = ?::jsonb
       from (select ${ownAuditSql(source.table)} as not_a_change) mark
      where ${match} and ${source.column} = ?::jsonb returning 1`,
    [JSON.stringify(after), ...key, JSON.stringify(before)]);
  return updated.length === 1;
}
