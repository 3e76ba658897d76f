/**
 * Entities: the legal person behind an account (CONTRACT §13). v2 `/entities` holds individuals
 * and businesses; v1 `/legal_entities` is the same store, businesses only, in the v1 shape
 * (flat `street_address`, `ein`, `contact_name`, `owners`, and `type` naming the legal structure,
 * e.g. LIMITED_LIABILITY_COMPANY ⇔ v2 `business.structure: llc`). Stakeholders (v1 owners) are
 * rows of their own (api/families/stakeholders), shown inside their entity.
 */
import type { Family, FieldSpec, Version } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { entityRules } from './rules.ts';
import { ENTITY_STATUS_TRIGGER } from './triggers.ts';

const BUSINESS = ['business'];

/** v1 legal entity `type` → stored (v2) `business.structure`. */
export const V1_STRUCTURES: Record<string, string> = {
  INDIVIDUAL_SOLE_PROPRIETORSHIP: 'sole_proprietorship',
  CORPORATION: 'corporation',
  LIMITED_LIABILITY_COMPANY: 'llc',
  PARTNERSHIP: 'partnership',
  ASSOCIATION_ESTATE_TRUST: 'trust',
  TAX_EXEMPT_ORGANIZATION: 'nonprofit',
  INTERNATIONAL_ORGANIZATION: 'international_organization',
  GOVERNMENT_AGENCY: 'government_agency',
};

/** `unverified` until an account is attached; the sandbox then decides (workers/tasks/entityVerification.ts). */
export const VERIFICATION_STATUSES = ['unverified', 'pending', 'verified', 'rejected'];

const text = (store: string, v1: string | undefined, v2: string | undefined, extra: Partial<FieldSpec> = {}): FieldSpec =>
  ({ store, type: 'string', v1, v2, maxLength: 256, ...extra });

const fields: FieldSpec[] = [
  idField,
  // The v2 discriminator; a v1 legal entity's `type` is its structure and always means a business.
  {
    store: 'type', type: 'string', v2: 'type', readOnly: true, enum: ['individual', 'business'],
    values: { v1: Object.fromEntries(Object.keys(V1_STRUCTURES).map((name) => [name, 'business'])) },
  },
  text('legal_name', 'legal_name', 'legal_name', { required: true }),
  text('country', 'country', 'country', { enum: ['US', 'CA'], default: 'US' }),
  text('phone_number', 'phone_number', 'phone_number', { maxLength: 32 }),
  text('tax_id.value', 'ein', 'tax_id.value', { maxLength: 32 }),
  text('address.address_line_1', 'street_address', 'address.address_line_1', { maxLength: 128 }),
  text('address.address_line_2', 'unit_number', 'address.address_line_2', { maxLength: 56 }),
  text('address.city', 'city', 'address.city', { maxLength: 56 }),
  text('address.state_province', 'state_province', 'address.state_province', { maxLength: 56 }),
  text('address.postal_code', 'postal_code', 'address.postal_code', { maxLength: 16 }),
  text('address.country_code', 'country_code', 'address.country_code', { maxLength: 2 }),
  text('business.category', undefined, 'business.category', { types: BUSINESS, maxLength: 64 }),
  text('business.structure', 'type', 'business.structure', {
    types: BUSINESS, enum: Object.values(V1_STRUCTURES), values: { v1: V1_STRUCTURES },
  }),
  text('business.website', 'website', 'business.website', { types: BUSINESS, maxLength: 512 }),
  text('business.formation.date', 'start_date', 'business.formation.date', { types: BUSINESS, maxLength: 32 }),
  text('business.formation.state_province', 'state_incorporated', 'business.formation.state_province', { types: BUSINESS, maxLength: 56 }),
  text('business.primary_contact.name', 'contact_name', 'business.primary_contact.name', { types: BUSINESS }),
  { store: 'business.primary_contact.email', type: 'email', v1: 'contact_email', v2: 'business.primary_contact.email', types: BUSINESS, maxLength: 256 },
  text('business.primary_contact.title', 'contact_title', 'business.primary_contact.title', { types: BUSINESS }),
  text('business.primary_contact.phone_number', undefined, 'business.primary_contact.phone_number', { types: BUSINESS, maxLength: 32 }),
  text('business.business_id', 'business_id', 'business.business_id', { types: BUSINESS, maxLength: 64 }),
  { store: 'business.public_exchanges', type: 'json', v1: 'public_exchanges', v2: 'business.public_exchanges', types: BUSINESS, maxLength: 2048 },
  // Created as stakeholder rows with the entity; rendered from those rows (rules.load), never stored here.
  { store: 'stakeholders', type: 'list', v1: 'owners', v2: 'business.stakeholders', types: BUSINESS },
  {
    store: 'verification_status', type: 'string', v1: 'verification_status', v2: 'verification_status',
    readOnly: true, enum: VERIFICATION_STATUSES, default: 'unverified',
  },
  attrsField,
  ...timestampFields,
];

export const entities: Family = {
  name: 'entity',
  table: 'entities',
  idPrefix: 'ent',
  types: ['individual', 'business'],
  fields,
  objectName: (version: Version) => (version === 'v1' ? 'legal_entity' : 'entity'),
  rules: entityRules,
  /** verification moves the entity's status (verification.ts) */
  triggers: [ENTITY_STATUS_TRIGGER],
};

/** The v1 view of the same store: businesses only, so a legal entity needs no `type` to be one. */
export const legalEntities: Family = { ...entities, types: ['business'] };
