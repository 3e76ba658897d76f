/**
 * Audit events (CONTRACT §20): one per change of an object, written by the database in the
 * change's own transaction (migration 20261126000300), read through the API and never changed.
 */
import { ACTOR_TYPES } from '../../db/auditContext.ts';
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField } from '../common.ts';
import { auditEventRules } from './changes.ts';

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

const fields: FieldSpec[] = [
  idField,
  { store: 'actor.type', type: 'string', ...both('actor.type'), enum: [...ACTOR_TYPES] },
  { store: 'actor.key_prefix', type: 'string', ...both('actor.key_prefix') },
  { store: 'actor.name', type: 'string', ...both('actor.name') },
  { store: 'action', type: 'string', ...both('action') },
  { store: 'object_type', type: 'string', ...both('object_type') },
  { store: 'object_id', type: 'id', ...both('object_id') },
  { store: 'changes', type: 'json', ...both('changes') },
  { store: 'request_id', type: 'string', ...both('request_id') },
  { store: 'ip', type: 'string', ...both('ip') },
  { store: 'created_at', type: 'datetime', ...both('created_at') },
];

export const auditEvents: Family = {
  name: 'audit_event',
  table: 'audit_events',
  idPrefix: 'aud',
  types: ['audit_event'],
  fields,
  objectName: () => 'audit_event',
  rules: auditEventRules,
};
