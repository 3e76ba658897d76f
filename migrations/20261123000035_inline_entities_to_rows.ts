import type { Knex } from 'knex';
import { loadConfig } from '../api/config.ts';
import { newId } from '../api/ids.ts';
import { createVault, loadVaultSecret, type Vault } from '../api/vault.ts';

/**
 * Accounts written before entities were rows kept their entity as free json (v2 `entity`, v1
 * `legal_entity` with `owners`). Each becomes an entity row (and stakeholder rows) linked by
 * `entity_id`, its tax numbers sealed with the vault and shown masked from now on; the clear
 * json leaves the account. The mapping is frozen here, not read from the current families.
 * Run it with the web process's SETTLE_VAULT_KEY / SETTLE_DATA_DIR (as `settle up` does), so the
 * sealed numbers open with the same key. Keys the schema never had are dropped.
 */

type Json = Record<string, unknown>;

/** v1 legal entity key → stored path. */
const LEGAL_ENTITY: Record<string, string> = {
  legal_name: 'legal_name', country: 'country', phone_number: 'phone_number', ein: 'tax_id.value',
  street_address: 'address.address_line_1', unit_number: 'address.address_line_2', city: 'address.city',
  state_province: 'address.state_province', postal_code: 'address.postal_code', country_code: 'address.country_code',
  type: 'business.structure', website: 'business.website', start_date: 'business.formation.date',
  state_incorporated: 'business.formation.state_province', contact_name: 'business.primary_contact.name',
  contact_email: 'business.primary_contact.email', contact_title: 'business.primary_contact.title', business_id: 'business.business_id',
};

/** v2 entity paths kept as they are. */
const ENTITY_PATHS = [
  'legal_name', 'country', 'phone_number', 'tax_id.value', 'address.address_line_1', 'address.address_line_2', 'address.city',
  'address.state_province', 'address.postal_code', 'address.country_code', 'business.category', 'business.structure', 'business.website',
  'business.formation.date', 'business.formation.state_province', 'business.primary_contact.name', 'business.primary_contact.email',
  'business.primary_contact.title', 'business.primary_contact.phone_number', 'business.business_id',
];

/** v1 owner key → stored stakeholder path. */
const OWNER: Record<string, string> = {
  full_name: 'personal_information.full_name', email: 'personal_information.email', birth_date: 'personal_information.birth_date',
  phone_number: 'personal_information.phone_number', ssn: 'govt_id.tax_id.value', street_address: 'address.address_line_1',
  unit_number: 'address.address_line_2', city: 'address.city', state_province: 'address.state_province',
  postal_code: 'address.postal_code', country_code: 'address.country_code', title: 'association.title',
  ownership: 'association.ownership.percentage',
};

const STAKEHOLDER_PATHS = [
  'country', 'personal_information.full_name', 'personal_information.email', 'personal_information.birth_date',
  'personal_information.phone_number', 'govt_id.tax_id.value', 'address.address_line_1', 'address.address_line_2', 'address.city',
  'address.state_province', 'address.postal_code', 'address.country_code',
];

const V1_STRUCTURES: Record<string, string> = {
  INDIVIDUAL_SOLE_PROPRIETORSHIP: 'sole_proprietorship', CORPORATION: 'corporation', LIMITED_LIABILITY_COMPANY: 'llc',
  PARTNERSHIP: 'partnership', ASSOCIATION_ESTATE_TRUST: 'trust', TAX_EXEMPT_ORGANIZATION: 'nonprofit',
  INTERNATIONAL_ORGANIZATION: 'international_organization', GOVERNMENT_AGENCY: 'government_agency',
};

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function get(source: unknown, dotted: string): unknown {
  let at = source;
  for (const key of dotted.split('.')) at = isObject(at) && Object.hasOwn(at, key) ? at[key] : undefined;
  return at;
}

function set(target: Json, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let at = target;
  for (const key of keys.slice(0, -1)) at = (isObject(at[key]) ? at[key] : (at[key] = {})) as Json;
  at[keys[keys.length - 1]] = value;
}

/** Copies scalar values from `source` (by each mapping's key) to their stored paths. */
function copy(source: unknown, mapping: Array<[from: string, to: string]>, into: Json): void {
  for (const [from, to] of mapping) {
    const value = get(source, from);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') set(into, to, value);
  }
}

/** The number at `path` sealed as the families seal it (api/families/sealedNumbers.ts), or dropped when unusable. */
function seal(data: Json, path: string, vault: () => Vault): void {
  const given = get(data, `${path}.value`);
  if (given === undefined) return;
  const digits = String(given).replace(/[\s-]/g, '');
  if (!/^\d{4,15}$/.test(digits)) set(data, path, { value: null });
  else set(data, path, { value: 'x'.repeat(Math.max(0, digits.length - 4)) + digits.slice(-4), sealed: vault().encrypt(digits) });
}

function entityData(row: Json, vault: () => Vault): { type: string; data: Json; stakeholders: Json[] } {
  const v1 = isObject(row.legal_entity) ? row.legal_entity : undefined;
  const v2 = isObject(row.entity) ? row.entity : undefined;
  const data: Json = {};
  copy(v1, Object.entries(LEGAL_ENTITY), data);
  const structure = get(data, 'business.structure');
  if (typeof structure === 'string') set(data, 'business.structure', V1_STRUCTURES[structure] ?? structure.toLowerCase());
  copy(v2, ENTITY_PATHS.map((p) => [p, p]), data);
  if (isObject(get(v1, 'public_exchanges'))) set(data, 'business.public_exchanges', get(v1, 'public_exchanges'));
  seal(data, 'tax_id', vault);
  const type = v2?.type === 'individual' ? 'individual' : 'business';
  if (type === 'individual') delete data.business;
  data.verification_status = 'unverified';
  const owners = [v1?.owners, get(v2, 'business.stakeholders')].flatMap((list, i) =>
    (Array.isArray(list) ? list : isObject(list) ? [list] : []).filter(isObject).map((owner) => {
      const stakeholder: Json = {};
      if (i === 0) copy(owner, Object.entries(OWNER), stakeholder);
      else {
        copy(owner, STAKEHOLDER_PATHS.map((p) => [p, p]), stakeholder);
        if (isObject(owner.association)) stakeholder.association = owner.association;
      }
      const percentage = Number(get(stakeholder, 'association.ownership.percentage'));
      if (get(stakeholder, 'association.ownership.percentage') !== undefined) {
        set(stakeholder, 'association.ownership.percentage', Number.isFinite(percentage) ? percentage : null);
      }
      seal(stakeholder, 'govt_id.tax_id', vault);
      return stakeholder;
    }));
  return { type, data, stakeholders: type === 'business' ? owners : [] };
}

export async function up(knex: Knex): Promise<void> {
  let vault: Vault | undefined;
  const openVault = () => {
    const config = loadConfig();
    vault ??= createVault(loadVaultSecret(config.vaultKey, config.dataDir));
    return vault;
  };
  for (;;) {
    const { rows } = await knex.raw(
      `select id, org_id, environment, data from accounts
        where (jsonb_typeof(data->'entity') = 'object' or jsonb_typeof(data->'legal_entity') = 'object')
          and data->'entity_id' is null
        order by id limit 500`);
    if (rows.length === 0) return;
    for (const account of rows as Array<{ id: string; org_id: string; environment: string; data: Json }>) {
      const { type, data, stakeholders } = entityData(account.data, openVault);
      const entityId = newId('ent');
      await knex.raw('insert into entities (id, org_id, environment, type, data) values (?, ?, ?, ?, ?::jsonb)',
        [entityId, account.org_id, account.environment, type, JSON.stringify(data)]);
      for (const stakeholder of stakeholders) {
        await knex.raw(`insert into stakeholders (id, org_id, environment, type, data) values (?, ?, ?, 'stakeholder', ?::jsonb)`,
          [newId('stk'), account.org_id, account.environment, JSON.stringify({ ...stakeholder, entity_id: entityId })]);
      }
      await knex.raw(`update accounts set data = (data - 'entity' - 'legal_entity') || jsonb_build_object('entity_id', ?::text) where id = ?`,
        [entityId, account.id]);
    }
  }
}

export async function down(): Promise<void> {
  // The clear numbers are gone by design; entity rows stay and accounts keep pointing at them.
}
