/**
 * Completing enrollment links (CONTRACT §13), the step behind the hosted enrollment page: the
 * account it makes, its payout or funding method, `account_id` on the link, `finished` with its
 * status event; a finished, expired or foreign link refuses; a bad bank account changes nothing.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import type { Db } from '../api/db/connection.ts';
import { createDomainServices } from '../api/domain.ts';
import type { RuleContext } from '../api/engine/family.ts';
import { completeAccountEnrollment, completePayoutEnrollment, type EnrollmentTarget } from '../api/families/intents/enrollment.ts';
import { startTestApi } from './helpers/api.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test';
const api = await startTestApi(t);
const V2 = { version: 'v2' };
const domain = createDomainServices(loadConfig());
const orgId = (await api.db('orgs').where({ name: 'acme' }).first()).id;
const BANK = { account_number: '123456789', routing_number: '036001808' };

/** Runs an enrollment step as the page would: one transaction for the tenant of the link. */
function enroll<T>(work: (ctx: RuleContext) => Promise<T>, tenantOrg = orgId): Promise<T> {
  return api.db.transaction((tx: Db) => work({ tx, tenant: { orgId: tenantOrg, environment: 'test' }, version: 'v2', principal: { kind: 'secret', keyId: 'page', settings: {} }, domain }));
}

/** The HTTP status the step's outcome maps to (ApiError carries it). */
async function statusOf(work: Promise<unknown>): Promise<number> {
  try {
    await work;
    return 200;
  } catch (error) {
    return (error as { status?: number }).status ?? 500;
  }
}

async function statusEvents(id: string): Promise<string[]> {
  return (await api.db('events').where({ object_id: id }).orderBy('seq')).map((e: any) => `${e.trigger} ${e.value}`);
}

t.test('a payouts enrollment link becomes a customer with its payout bank account and finishes', async (t) => {
  const link = (await api.request('POST', '/intents', { ...V2, json: { type: 'payouts_enrollment_link', payouts_enrollment_link: { entity_name: 'Jango' } } })).body;
  const target: EnrollmentTarget = { table: 'intents', id: link.id };
  const accountId = await enroll((ctx) => completePayoutEnrollment(ctx, target, { name: 'Jango Fett', email: 'jango@example.com', bank_account: BANK }));
  const account = await api.request('GET', `/accounts/${accountId}`, V2);
  t.match(account.body, { type: 'customer', name: 'Jango Fett', contact_details: { email: 'jango@example.com' } });
  const methods = await api.request('GET', `/payment_methods?account_id=${accountId}`, V2);
  t.match(methods.body.values, [{ type: 'bank_account', account_holder: 'Jango Fett', bank_account: { account_number: 'xxxxx6789' }, account_defaults: { funding: 'all' } }]);
  t.match((await api.request('GET', `/intents/${link.id}`, V2)).body, { status: 'finished', account_id: accountId });
  t.same(await statusEvents(link.id), ['intent:status finished']);
  t.equal(await statusOf(enroll((ctx) => completePayoutEnrollment(ctx, target, { name: 'Again', bank_account: BANK }))), 409, 'once only');
});

t.test('a payment activation enrolls the same way, as a v1 customer', async (t) => {
  const activation = (await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'Boba' } } })).body;
  const accountId = await enroll((ctx) => completePayoutEnrollment(ctx, { table: 'payment_activations', id: activation.id }, { name: 'Boba', bank_account: BANK }));
  t.equal((await api.request('GET', `/customers/${accountId}`)).body.object, 'customer');
  t.match((await api.request('GET', `/payment_activations/${activation.id}`)).body, { status: 'finished', account_id: accountId });
  t.same(await statusEvents(activation.id), ['payment_activation:status finished']);
});

t.test('an account enrollment link becomes a processing account with its entity, which starts verification', async (t) => {
  const link = (await api.request('POST', '/intents', { ...V2, json: { type: 'account_enrollment_link', account_enrollment_link: { entity: { country: 'US', type: 'business' } } } })).body;
  const accountId = await enroll((ctx) => completeAccountEnrollment(ctx, { table: 'intents', id: link.id }, {
    name: 'New Merchant', entity: { legal_name: 'New Merchant LLC', tax_id: { value: '123456789' } }, bank_account: BANK,
  }));
  const account = (await api.request('GET', `/accounts/${accountId}`, V2)).body;
  t.match(account, { type: 'processing', processing: { status: { funding: 'pending' } }, entity: { type: 'business', legal_name: 'New Merchant LLC', verification_status: 'pending', tax_id: { value: 'xxxxx6789' } } });
  t.equal((await api.request('GET', `/payment_methods?account_id=${accountId}`, V2)).body.values[0].account_defaults.funding, 'all');
  t.equal((await api.request('GET', `/intents/${link.id}`, V2)).body.status, 'finished');
});

t.test('bad input, the wrong kind, an expired link or another tenant change nothing', async (t) => {
  const link = (await api.request('POST', '/intents', { ...V2, json: { type: 'payouts_enrollment_link' } })).body;
  const target: EnrollmentTarget = { table: 'intents', id: link.id };
  const accountsBefore = Number((await api.db('accounts').count('* as n'))[0].n);
  t.equal(await statusOf(enroll((ctx) => completePayoutEnrollment(ctx, target, { name: 'X', bank_account: { account_number: '1', routing_number: '000000001' } }))), 400);
  t.equal(await statusOf(enroll((ctx) => completeAccountEnrollment(ctx, target, { name: 'X', entity: { legal_name: 'X' } }))), 400, 'not an account enrollment link');
  t.equal(await statusOf(enroll((ctx) => completePayoutEnrollment(ctx, target, { name: 'X', bank_account: BANK }), 'org_someone_else')), 404, 'another tenant');
  await api.db.raw(`update intents set data = jsonb_set(data, '{expires_at}', to_jsonb(?::text)) where id = ?`, [new Date(Date.now() - 1000).toISOString(), link.id]);
  t.equal(await statusOf(enroll((ctx) => completePayoutEnrollment(ctx, target, { name: 'X', bank_account: BANK }))), 409, 'expired');
  t.equal(Number((await api.db('accounts').count('* as n'))[0].n), accountsBefore, 'no account left behind');
  t.equal((await api.request('GET', `/intents/${link.id}`, V2)).body.status, 'pending');
});
