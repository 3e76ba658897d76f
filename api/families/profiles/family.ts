/**
 * Profiles (CONTRACT §18), read-only: one per processing account (the `profiles` view), naming
 * its processing settings; client libraries read `processing_settings_id` from here to create
 * processing accounts with the same settings (v2 `processing.settings_id`).
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField, timestampFields } from '../common.ts';

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

const fields: FieldSpec[] = [
  idField,
  { store: 'name', type: 'string', ...both('name') },
  { store: 'account_id', type: 'id', v1: 'processing_id', v2: 'account_id', readOnly: true },
  { store: 'processing_settings_id', type: 'id', ...both('processing_settings_id') },
  ...timestampFields,
];

export const profiles: Family = {
  name: 'profile',
  table: 'profiles',
  idPrefix: 'prof',
  types: ['profile'],
  fields,
  objectName: () => 'profile',
};
