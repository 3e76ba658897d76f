/**
 * Sandbox verification (CONTRACT §13): attaching an entity starts it, the worker settles it after
 * the verification delay, and the processing accounts it backs follow, each change with its event.
 * The worker's clock stands a delay ahead (seams.clock), so the delay has passed when its job
 * runs: nothing here waits for it.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { movableClock } from './helpers/seams.ts';
import { eventually } from './helpers/wait.ts';

const DELAY_MS = 60_000;
const DELAY = { SETTLE_VERIFICATION_DELAY: String(DELAY_MS) };
const api = await startTestApi(t, DELAY);
await startTestWorker(t, api.databaseUrl, { ...DELAY, WORKER_POLL_INTERVAL: '50' }, { clock: movableClock(DELAY_MS).clock });
const V2 = { version: 'v2' };

/** The verify_entity job waiting for an entity (its job key is `verify_entity:<entity id>`). */
async function verificationJobs(databaseApi: typeof api, entityId: string): Promise<Array<{ run_at: Date }>> {
  const found = await databaseApi.db.raw(`select run_at from graphile_worker.jobs where key = ?`, [`verify_entity:${entityId}`]);
  return found.rows;
}

async function eventsOf(id: string): Promise<Array<[string, string]>> {
  const rows = await api.db('events').where({ object_id: id }).orderBy('seq');
  return rows.map((e: any) => [e.trigger, e.value]);
}

const entity = (taxId: string) => ({ type: 'business', legal_name: 'Verify Me LLC', country: 'US', tax_id: { value: taxId } });

t.test('an attached entity is verified a moment later and its processing account becomes active', async (t) => {
  const created = await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Good', entity: entity('123456789') } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.processing.status.funding, 'pending');
  t.equal(created.body.entity.verification_status, 'pending', 'attaching started verification');
  const settled = await eventually(() => api.request('GET', `/accounts/${created.body.id}`, V2), (r) => r.body.processing.status.funding !== 'pending');
  t.equal(settled.body.processing.status.funding, 'active');
  t.equal(settled.body.entity.verification_status, 'verified');
  t.equal((await api.request('GET', `/processing_accounts/${created.body.id}`)).body.status, 'active', 'v1 status too');
  t.same(await eventsOf(created.body.entity.id), [['entity:status', 'pending'], ['entity:status', 'verified']]);
  t.same(await eventsOf(created.body.id), [['processing_status', 'pending'], ['processing_status', 'active']]);
  const history = (await api.request('GET', `/audit_events?object_id=${created.body.id}&order_by=asc(created_at)`)).body.values;
  t.match(history.at(-1), { action: 'update', actor: { type: 'system', name: 'verify_entity' } }, 'the account\'s change is the worker\'s, through the account family\'s update');
});

t.test('a tax id ending in 0000 is rejected and the processing account denied', async (t) => {
  const created = await api.request('POST', '/processing_accounts', {
    json: { name: 'Bad', legal_entity: { legal_name: 'Nope LLC', type: 'LIMITED_LIABILITY_COMPANY', ein: '12-3450000' } },
  });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.status, 'pending');
  const settled = await eventually(() => api.request('GET', `/processing_accounts/${created.body.id}`), (r) => r.body.status !== 'pending');
  t.equal(settled.body.status, 'denied');
  t.equal(settled.body.legal_entity.verification_status, 'rejected');
  t.same(await eventsOf(settled.body.legal_entity.id), [['entity:status', 'pending'], ['entity:status', 'rejected']]);
  t.same(await eventsOf(created.body.id), [['processing_status', 'pending'], ['processing_status', 'denied']]);
  const fresh = (await api.request('POST', '/legal_entities', { json: { legal_name: 'Better LLC', ein: '12-3456789' } })).body;
  const reopened = await api.request('PUT', `/processing_accounts/${created.body.id}`, { json: { legal_entity_id: fresh.id } });
  t.equal(reopened.body.status, 'pending', 'another entity starts over');
  const active = await eventually(() => api.request('GET', `/processing_accounts/${created.body.id}`), (r) => r.body.status !== 'pending');
  t.equal(active.body.status, 'active');
});

t.test('an entity on its own stays unverified, with no verification queued', async (t) => {
  const alone = (await api.request('POST', '/entities', { ...V2, json: entity('987654321') })).body;
  t.equal((await api.request('GET', `/entities/${alone.id}`, V2)).body.verification_status, 'unverified');
  t.same(await verificationJobs(api, alone.id), [], 'nothing will verify it');
});

t.test('attaching an entity later starts verification, and a second account follows the decision', async (t) => {
  const alone = (await api.request('POST', '/entities', { ...V2, json: entity('987654322') })).body;
  const first = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'First' } })).body;
  const attached = await api.request('PUT', `/accounts/${first.id}`, { ...V2, json: { entity_id: alone.id } });
  t.equal(attached.status, 200, JSON.stringify(attached.body));
  t.equal(attached.body.entity.verification_status, 'pending');
  const verified = await eventually(() => api.request('GET', `/entities/${alone.id}`, V2), (r) => r.body.verification_status !== 'pending');
  t.equal(verified.body.verification_status, 'verified');
  const second = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Second', entity_id: alone.id } })).body;
  t.equal(second.processing.status.funding, 'pending', 'every processing account starts pending');
  const active = await eventually(() => api.request('GET', `/accounts/${second.id}`, V2), (r) => r.body.processing.status.funding !== 'pending');
  t.equal(active.body.processing.status.funding, 'active');
  t.same(await eventsOf(alone.id), [['entity:status', 'pending'], ['entity:status', 'verified']], 'verified once, not again');
});

t.test('a customer account with an entity starts verification but has no processing status', async (t) => {
  const customer = (await api.request('POST', '/accounts', { ...V2, json: { type: 'customer', name: 'Buyer', entity: { ...entity('111222333'), type: 'individual' } } })).body;
  const verified = await eventually(() => api.request('GET', `/entities/${customer.entity.id}`, V2), (r) => r.body.verification_status !== 'pending');
  t.equal(verified.body.verification_status, 'verified');
  t.same(await eventsOf(customer.id), [], 'no processing_status for a customer');
});

t.test('a worker whose clock has not reached the delay leaves the entity pending and looks again when it is due', async (t) => {
  const separate = await startTestApi(t, DELAY);
  await startTestWorker(t, separate.databaseUrl, { ...DELAY, WORKER_POLL_INTERVAL: '50' });
  const created = (await separate.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Early', entity: entity('123450001') } })).body;
  const entityId = created.entity.id;
  const requestedAt = Date.parse((await separate.db.raw('select data->>\'verification_requested_at\' as at from entities where id = ?', [entityId])).rows[0].at);
  // The first look runs at once; finding the delay not passed, it moves its job to the due time.
  const moved = await eventually(() => verificationJobs(separate, entityId), (jobs) => jobs.length === 1 && jobs[0].run_at.getTime() > Date.now() + DELAY_MS / 2);
  t.same(moved.map((job) => job.run_at.getTime()), [requestedAt + DELAY_MS], 'the next look is at the request time plus the delay');
  t.equal((await separate.request('GET', `/entities/${entityId}`, V2)).body.verification_status, 'pending');
});
