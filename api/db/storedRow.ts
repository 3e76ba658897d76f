/**
 * The columns of a family row as the engine handles it (`StoredObject`): `select ${STORED_ROW}
 * from <family table> …`. One list, so a column added to every family table is added once.
 */
export const STORED_ROW = 'id, type, data, created_at, modified_at';

/** A stored row as the engine handles it. */
export interface StoredObject {
  id: string;
  type: string;
  created_at: Date;
  modified_at: Date;
  data: Record<string, unknown>;
}
