/**
 * Processing settings, read-only: one per processing account, drawn from the account itself
 * (the `processing_settings` view). v1 shows `processing_id`, `funding_style`, `funding_delay`,
 * `descriptor`; v2 `account_id`, `funding{style, delay, default_descriptor}`, `default_category`.
 * They change with the account (PUT /processing_accounts/{id}, v2 `processing.settings`).
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField, timestampFields } from '../common.ts';

const fields: FieldSpec[] = [
  idField,
  { store: 'account_id', type: 'id', v1: 'processing_id', v2: 'account_id', readOnly: true },
  {
    store: 'funding.style', type: 'string', v1: 'funding_style', v2: 'funding.style', readOnly: true,
    enum: ['netted', 'gross', 'itemized', 'manual'], values: { v1: { net: 'netted' } },
  },
  { store: 'funding.delay', type: 'integer', v1: 'funding_delay', v2: 'funding.delay', readOnly: true },
  { store: 'funding.default_descriptor', type: 'string', v1: 'descriptor', v2: 'funding.default_descriptor', readOnly: true },
  { store: 'default_category', type: 'string', v1: 'default_category', v2: 'default_category', readOnly: true },
  ...timestampFields,
];

export const processingSettings: Family = {
  name: 'processing_settings',
  table: 'processing_settings',
  idPrefix: 'ps',
  types: ['processing_settings'],
  fields,
  objectName: () => 'processing_settings',
};
