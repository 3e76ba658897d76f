/**
 * The columns of a family row as the engine handles it (`StoredObject`): `select ${STORED_ROW}
 * from <family table> …`. One list, so a column added to every family table is added once.
 */
export const STORED_ROW = 'id, type, data, created_at, modified_at';
