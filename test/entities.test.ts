/**
 * Entities, v1 legal entities and stakeholders (CONTRACT §13): created alone or inline on an
 * account, tax numbers sealed and read back masked, one store behind both versions, tenant-scoped,
 * all-or-nothing on bad input.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const V2 = { version: 'v2' };

const BUSINESS_ENTITY = {
  type: 'business',
  legal_name: 'Realty LLC',
  country: 'US',
  tax_id: { value: '12-3456789' },
  address: { address_line_1: '1 Main St', city: 'Austin', state_province: 'TX', postal_code: '78701' },
  phone_number: '555-555-1234',
  business: {
    category: 'real_estate',
    structure: 'llc',
    website: 'https://realty.example',
    formation: { state_province: 'TX', date: '2019-10-01' },
    primary_contact: { name: 'Pat Contact', email: 'pat@example.com' },
    stakeholders: [{
      personal_information: { full_name: 'Olive Owner', email: 'olive@example.com', birth_date: '1980-02-03' },
      govt_id: { tax_id: { value: '123-45-6789' } },
      association: { ownership: { percentage: 60 }, roles: ['principal_officer'], title: 'CEO' },
    }],
  },
};

const LEGAL_ENTITY = {
  legal_name: 'Sole Prop LLC',
  type: 'INDIVIDUAL_SOLE_PROPRIETORSHIP',
  country: 'US',
  ein: '036001808',
  street_address: '2 Side St',
  unit_number: 'Apt 3',
  city: 'Denver',
  state_province: 'CO',
  state_incorporated: 'CO',
  postal_code: '80202-1234',
  phone_number: '(555) 555-1234',
  website: 'https://sole.example',
  start_date: '05/01/2015',
  contact_name: 'Cat Contact',
  contact_email: 'cat@example.com',
  contact_title: 'Owner',
  owners: {
    full_name: 'Oscar Owner', email: 'oscar@example.com', ssn: '011000015', birth_date: '5/3/1985',
    title: 'Owner', ownership: '100', street_address: '3 Home Rd', city: 'Denver', state_province: 'CO',
    postal_code: '80202', phone_number: '(555) 555-9876', type: 'owner',
  },
};

async function count(table: string): Promise<number> {
  return Number((await api.db(table).count('* as n'))[0].n);
}

t.test('a v2 entity created alone seals its tax ids and shows its stakeholders as objects', async (t) => {
  const res = await api.request('POST', '/entities', { ...V2, json: BUSINESS_ENTITY });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { object: 'entity', type: 'business', legal_name: 'Realty LLC', tax_id: { value: 'xxxxx6789' }, verification_status: 'unverified' });
  t.match(res.body.id, /^ent_[0-9A-Za-z]{21,}$/);
  t.equal(res.body.business.formation.date, '2019-10-01');
  const [owner] = res.body.business.stakeholders;
  t.match(owner, {
    object: 'stakeholder', entity_id: res.body.id, govt_id: { tax_id: { value: 'xxxxx6789' } },
    personal_information: { full_name: 'Olive Owner' }, association: { ownership: { percentage: 60 }, roles: ['principal_officer'] },
  });
  t.match(owner.id, /^stk_/);
  const stored = await api.db('entities').where({ id: res.body.id }).first();
  t.notMatch(JSON.stringify(stored.data), '123456789', 'no clear tax id at rest');
  t.notMatch(JSON.stringify(await api.db('stakeholders').where({ id: owner.id }).first()), '123456789', 'no clear SSN at rest');
  t.same(await api.request('GET', `/entities/${res.body.id}`, V2).then((r) => r.body), res.body, 'get answers what create answered');
  const listed = await api.request('GET', `/stakeholders?entity_id=${res.body.id}`, V2);
  t.same(listed.body.values.map((s: any) => s.id), [owner.id]);
});

t.test('a v1 legal entity is the same row as a v2 business entity, in the v1 shape', async (t) => {
  const res = await api.request('POST', '/legal_entities', { json: LEGAL_ENTITY });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, {
    object: 'legal_entity', type: 'INDIVIDUAL_SOLE_PROPRIETORSHIP', ein: 'xxxxx1808', street_address: '2 Side St',
    start_date: '2015-05-01', contact_email: 'cat@example.com', postal_code: '80202-1234',
  });
  t.match(res.body.owners, [{ object: 'stakeholder', full_name: 'Oscar Owner', ssn: 'xxxxx0015', ownership: 100, birth_date: '1985-05-03', type: 'owner' }]);
  const v2 = await api.request('GET', `/entities/${res.body.id}`, V2);
  t.match(v2.body, { object: 'entity', type: 'business', business: { structure: 'sole_proprietorship' }, address: { address_line_1: '2 Side St' } });
  const individual = await api.request('POST', '/entities', { ...V2, json: { type: 'individual', legal_name: 'Ivy Person' } });
  t.equal(individual.status, 200, JSON.stringify(individual.body));
  const legal = await api.request('GET', '/legal_entities');
  t.notOk(legal.body.values.some((e: any) => e.id === individual.body.id), '/legal_entities lists businesses only');
  t.equal((await api.request('GET', `/legal_entities/${individual.body.id}`)).status, 404);
  const refused = await api.request('POST', '/legal_entities', { json: { ...LEGAL_ENTITY, owners: undefined, type: 'individual' } });
  t.equal(refused.status, 400, 'an individual is not a legal entity');
  const untyped = await api.request('POST', '/processing_accounts', { json: { name: 'Shop', legal_entity: { legal_name: 'Shop LLC' } } });
  t.equal(untyped.status, 200, JSON.stringify(untyped.body));
  t.match(untyped.body.legal_entity, { object: 'legal_entity', legal_name: 'Shop LLC', type: null }, 'a legal entity needs no type to be a business');
});

t.test('a v1 processing account stores its legal entity as an entity row and shows it whole', async (t) => {
  const res = await api.request('POST', '/processing_accounts', { json: { name: 'Sole Prop', legal_entity: LEGAL_ENTITY } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.status, 'pending');
  t.match(res.body.legal_entity, { object: 'legal_entity', id: /^ent_/, ein: 'xxxxx1808', owners: [{ ssn: 'xxxxx0015' }] });
  t.equal(res.body.legal_entity_id, res.body.legal_entity.id);
  t.match(res.body.processing_settings_id, /^ps_/);
  const stored = await api.db('accounts').where({ id: res.body.id }).first();
  t.same([stored.data.legal_entity, stored.data.entity_id], [undefined, res.body.legal_entity.id], 'only the reference is on the account');
  t.notMatch(JSON.stringify(stored.data), '036001808');
  const v2 = await api.request('GET', `/accounts/${res.body.id}`, V2);
  t.match(v2.body, { entity_id: res.body.legal_entity.id, entity: { object: 'entity', tax_id: { value: 'xxxxx1808' } } });
  const got = await api.request('GET', `/processing_accounts/${res.body.id}`);
  t.same(got.body.legal_entity, res.body.legal_entity);
});

t.test('a v2 account takes an inline entity or an existing one by id; one entity backs several accounts', async (t) => {
  const inline = await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Realty', entity: BUSINESS_ENTITY, processing: { default_category: 'real_estate' } } });
  t.equal(inline.status, 200, JSON.stringify(inline.body));
  t.match(inline.body, { processing: { status: { funding: 'pending' } }, entity: { object: 'entity', legal_name: 'Realty LLC', business: { stakeholders: [{ object: 'stakeholder' }] } } });
  const entityId = inline.body.entity.id;
  const byId = await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Realty Two', entity_id: entityId } });
  t.equal(byId.status, 200, JSON.stringify(byId.body));
  t.equal(byId.body.entity.id, entityId);
  const byRef = await api.request('POST', '/accounts', { ...V2, json: { type: 'customer', name: 'Realty Buyer', entity: { id: entityId } } });
  t.equal(byRef.status, 200, JSON.stringify(byRef.body));
  t.equal(byRef.body.entity_id, entityId);
  t.equal(await api.db('entities').where({ id: entityId }).then((r) => r.length), 1, 'one entity row');
  const replace = await api.request('PUT', `/accounts/${inline.body.id}`, { ...V2, json: { entity: { legal_name: 'Other' } } });
  t.equal(replace.status, 400, 'an inline entity does not silently replace the attached one');
  t.match(replace.body.details, { entity: /PUT \/entities/ });
  const renamed = await api.request('PUT', `/entities/${entityId}`, { ...V2, json: { legal_name: 'Realty Group LLC', tax_id: { value: 'xxxxx6789' } } });
  t.equal(renamed.status, 200, JSON.stringify(renamed.body));
  t.equal(renamed.body.tax_id.value, 'xxxxx6789', 'the masked value sent back keeps the sealed number');
  t.equal((await api.request('GET', `/accounts/${byId.body.id}`, V2)).body.entity.legal_name, 'Realty Group LLC', 'accounts show the entity as it is now');
  const cleared = await api.request('PUT', `/entities/${entityId}`, { ...V2, json: { tax_id: { value: null } } });
  t.equal(cleared.body.tax_id.value, null);
  t.same((await api.db('entities').where({ id: entityId }).first()).data.tax_id, { value: null }, 'a cleared number leaves nothing sealed behind');
});

t.test('bad entity input is a 400 naming the fields, and nothing is written', async (t) => {
  const before = [await count('accounts'), await count('entities'), await count('stakeholders')];
  const cases: Array<[string, string, any, RegExp]> = [
    ['POST', '/accounts', { type: 'processing', name: 'X', entity: { ...BUSINESS_ENTITY, tax_id: { value: 'abc' } } }, /entity\[tax_id\]\[value\]/],
    ['POST', '/accounts', { type: 'processing', name: 'X', entity: { ...BUSINESS_ENTITY, shoe_size: 9 } }, /entity\[shoe_size\]/],
    ['POST', '/accounts', { type: 'processing', name: 'X', entity: 'ent_x' }, /entity/],
    ['POST', '/accounts', { type: 'processing', name: 'X', entity_id: 'ent_missing' }, /entity_id/],
    ['POST', '/entities', { ...BUSINESS_ENTITY, business: { ...BUSINESS_ENTITY.business, stakeholders: [{ association: { ownership: { percentage: 101 } } }] } }, /stakeholders/],
    ['POST', '/entities', { ...BUSINESS_ENTITY, business: { ...BUSINESS_ENTITY.business, stakeholders: [{ association: { roles: 'king' } }] } }, /stakeholders/],
    ['POST', '/entities', { ...BUSINESS_ENTITY, business: { ...BUSINESS_ENTITY.business, formation: { date: 'soon' } } }, /business\[formation\]\[date\]/],
    ['POST', '/entities', { ...BUSINESS_ENTITY, type: 'martian' }, /type/],
    ['POST', '/entities', { type: 'individual', legal_name: 'I', business: { category: 'x' } }, /business/],
    ['POST', '/stakeholders', { personal_information: { full_name: 'Nobody' } }, /entity_id/],
    ['POST', '/stakeholders', { entity_id: 'ent_missing' }, /entity_id/],
  ];
  for (const [method, path, json, described] of cases) {
    const res = await api.request(method, path, { ...V2, json });
    t.equal(res.status, 400, `${path} ${JSON.stringify(json).slice(0, 80)}: ${JSON.stringify(res.body)}`);
    t.equal(res.body.error_type, 'InvalidAttributes');
    t.match(res.body.error_description, described);
  }
  const v1 = await api.request('POST', '/processing_accounts', { json: { name: 'X', legal_entity: { ...LEGAL_ENTITY, owners: [{ ...LEGAL_ENTITY.owners, birth_date: 'yesterday' }] } } });
  t.equal(v1.status, 400, JSON.stringify(v1.body));
  t.match(v1.body.error_description, /legal_entity\[owners\]\[0\]\[birth_date\]/);
  const overOwned = await api.request('POST', '/legal_entities', { json: { ...LEGAL_ENTITY, owners: [LEGAL_ENTITY.owners, LEGAL_ENTITY.owners] } });
  t.equal(overOwned.status, 400, 'two owners of 100% each');
  const bulk = await api.request('POST', '/accounts', { ...V2, json: { object: 'list', values: [
    { type: 'processing', name: 'Good', entity: BUSINESS_ENTITY },
    { type: 'processing', name: 'Bad', entity: { ...BUSINESS_ENTITY, tax_id: { value: '1' } } },
  ] } });
  t.equal(bulk.status, 400, 'a bulk create with one bad entity');
  t.match(bulk.body.error_description, /\[1\]\[entity\]\[tax_id\]\[value\]/);
  t.same([await count('accounts'), await count('entities'), await count('stakeholders')], before, 'no account, entity or stakeholder left behind');
});

t.test('entities belong to one tenant', async (t) => {
  const mine = (await api.request('POST', '/entities', { ...V2, json: { type: 'individual', legal_name: 'Mine' } })).body;
  const other = await api.newKey('other-org', 'test');
  t.equal((await api.request('GET', `/entities/${mine.id}`, { ...V2, key: other })).status, 404);
  t.same((await api.request('GET', '/entities', { ...V2, key: other })).body.values, []);
  const attach = await api.request('POST', '/accounts', { ...V2, key: other, json: { type: 'processing', name: 'Thief', entity_id: mine.id } });
  t.equal(attach.status, 400, 'another org cannot attach it');
  const stake = await api.request('POST', '/stakeholders', { ...V2, key: other, json: { entity_id: mine.id } });
  t.equal(stake.status, 400);
});

t.test('an entity backing an account cannot be deleted, and the refusal names the account', async (t) => {
  const account = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Held', entity: BUSINESS_ENTITY } })).body;
  const refused = await api.request('DELETE', `/entities/${account.entity.id}`, V2);
  t.equal(refused.status, 400);
  t.match(refused.body.details, { id: new RegExp(account.id) });
});

t.test('a free entity is deleted with its stakeholders', async (t) => {
  const free = (await api.request('POST', '/entities', { ...V2, json: BUSINESS_ENTITY })).body;
  const deleted = await api.request('DELETE', `/entities/${free.id}`, V2);
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  t.equal(deleted.body.id, free.id);
  t.equal((await api.db('stakeholders').whereRaw(`data->>'entity_id' = ?`, [free.id])).length, 0, 'its stakeholders are gone');
  const [stakeholder] = free.business.stakeholders;
  const history = (await api.request('GET', `/audit_events?object_id=${stakeholder.id}&order_by=asc(created_at)`)).body.values;
  t.match(history.at(-1), { action: 'delete', object_type: 'stakeholder', actor: { type: 'secret_key' }, request_id: deleted.headers.get('x-request-id') });
});

t.test('processing accounts as other client libraries send them: spaced tax numbers, years owned, roles, a settings id, flagged funding methods', async (t) => {
  const template = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Template' } })).body;
  const v2 = await api.request('POST', '/accounts', {
    ...V2,
    json: {
      type: 'processing', name: 'Processing Account',
      processing: { status: { funding: 'pending' }, settings_id: template.processing.settings_id },
      payment_methods: [{ type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' }, billing_address: { postal_code: '11111' }, account_defaults: { funding: 'all' } }],
      entity: {
        type: 'business', legal_name: 'Example', country: 'US', phone_number: '123 123-1234', tax_id: { value: '123 12 1234' },
        address: { address_line_1: '123 Example St', city: 'New York', state_province: 'NY', postal_code: '11111' },
        business: {
          category: 'real_estate', structure: 'llc', website: 'https://example.com', formation: { state_province: 'NY', date: '2019-10-01' },
          primary_contact: { name: 'John Smith', email: 'johnsmith@example.com' },
          stakeholders: [{
            country: 'US', personal_information: { full_name: 'John Smith', email: 'johnsmith@example.com', birth_date: '1990-05-10', phone_number: '123 123-1234' },
            address: { address_line_1: '123 Example St', city: 'New York', state_province: 'NY', postal_code: '11111' },
            govt_id: { tax_id: { value: '123 12 1234' } },
            association: { ownership: { percentage: 100, years_owned: 5 }, roles: ['principal_officer'], title: 'CEO' },
          }],
        },
      },
    },
  });
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.match(v2.body.entity, { tax_id: { value: 'xxxxx1234' }, business: { stakeholders: [{ govt_id: { tax_id: { value: 'xxxxx1234' } }, association: { ownership: { years_owned: 5 } } }] } });
  const v1 = await api.request('POST', '/processing_accounts', {
    json: {
      name: 'Processing Account',
      legal_entity: {
        ...LEGAL_ENTITY, ein: '23 423 4234',
        owners: [{ ...LEGAL_ENTITY.owners, ssn: '234 23 4234', birth_date: '06/20/1985' }],
      },
      payment_methods: [{ type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } }],
    },
  });
  t.equal(v1.status, 200, JSON.stringify(v1.body));
  t.match(v1.body.legal_entity, { ein: 'xxxxx4234', owners: [{ ssn: 'xxxxx4234', birth_date: '1985-06-20' }] });
});

t.test('concurrent stakeholders of one entity never own more than 100% together', async (t) => {
  const entity = (await api.request('POST', '/entities', { ...V2, json: { type: 'business', legal_name: 'Race LLC' } })).body;
  const answers = await Promise.all(Array.from({ length: 6 }, () =>
    api.request('POST', '/stakeholders', { ...V2, json: { entity_id: entity.id, association: { ownership: { percentage: 30 } } } })));
  t.same(answers.map((a) => a.status).sort(), [200, 200, 200, 400, 400, 400], 'three fit, three do not');
  const total = (await api.request('GET', `/stakeholders?entity_id=${entity.id}`, V2)).body.values
    .reduce((sum: number, s: any) => sum + s.association.ownership.percentage, 0);
  t.equal(total, 90);
});

t.test('an entity deleted while it is being attached leaves no account pointing at nothing', async (t) => {
  for (let round = 0; round < 5; round++) {
    const entity = (await api.request('POST', '/entities', { ...V2, json: { type: 'individual', legal_name: `Racer ${round}` } })).body;
    const [attach, remove] = await Promise.all([
      api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: `Racer ${round}`, entity_id: entity.id } }),
      api.request('DELETE', `/entities/${entity.id}`, V2),
    ]);
    t.same([attach.status, remove.status].sort(), [200, 400], 'one of them wins, the other loses with a 400');
    const dangling = await api.db.raw(`select a.id from accounts a left join entities e on e.id = a.data->>'entity_id'
      where a.data->>'entity_id' is not null and e.id is null`);
    t.same(dangling.rows, [], 'no account names a missing entity');
  }
});
