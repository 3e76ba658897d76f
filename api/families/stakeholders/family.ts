/**
 * Stakeholders: the people behind a business entity (v1 legal entity `owners`), one row each,
 * linked by `entity_id` (v1 `legal_entity_id`). v1 is flat (`full_name`, `ssn`, `ownership`,
 * `street_address` …); v2 nests (`personal_information`, `govt_id.tax_id`, `address`,
 * `association{ownership{percentage, years_owned}, roles, title}`). The SSN / tax id is sealed.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { stakeholderRules } from './rules.ts';

const text = (store: string, v1: string | undefined, v2: string | undefined, maxLength = 256): FieldSpec =>
  ({ store, type: 'string', v1, v2, maxLength });

const fields: FieldSpec[] = [
  idField,
  // v1 owners say `type: owner`; v2 has no type.
  { store: 'type', type: 'string', v1: 'type', readOnly: true, enum: ['stakeholder'], values: { v1: { owner: 'stakeholder' } } },
  { store: 'entity_id', type: 'id', v1: 'legal_entity_id', v2: 'entity_id', required: true },
  text('country', 'country', 'country', 2),
  text('personal_information.full_name', 'full_name', 'personal_information.full_name'),
  { store: 'personal_information.email', type: 'email', v1: 'email', v2: 'personal_information.email', maxLength: 256 },
  text('personal_information.birth_date', 'birth_date', 'personal_information.birth_date', 32),
  text('personal_information.phone_number', 'phone_number', 'personal_information.phone_number', 32),
  text('govt_id.tax_id.value', 'ssn', 'govt_id.tax_id.value', 32),
  text('address.address_line_1', 'street_address', 'address.address_line_1', 128),
  text('address.address_line_2', 'unit_number', 'address.address_line_2', 56),
  text('address.city', 'city', 'address.city', 56),
  text('address.state_province', 'state_province', 'address.state_province', 56),
  text('address.postal_code', 'postal_code', 'address.postal_code', 16),
  text('address.country_code', 'country_code', 'address.country_code', 2),
  // v2 takes the association as one object (its roles are a list of names), checked in rules.
  { store: 'association', type: 'json', v2: 'association', maxLength: 2048 },
  { store: 'association.ownership.percentage', type: 'number', v1: 'ownership', min: 0, max: 100 },
  text('association.title', 'title', undefined),
  attrsField,
  ...timestampFields,
];

export const stakeholders: Family = {
  name: 'stakeholder',
  table: 'stakeholders',
  idPrefix: 'stk',
  types: ['stakeholder'],
  fields,
  objectName: () => 'stakeholder',
  rules: stakeholderRules,
};
