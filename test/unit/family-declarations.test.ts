/**
 * Unit tier: what families declare for the rest of the service and the registry collects
 * (api/families/index.ts): the webhook triggers and the client-token scopes are the ones the
 * service had when they were lists of their own (webhooks' TRIGGERS, auth.ts' CLIENT_SCOPES).
 */
import t from 'tap';
import { validateIntent } from '../../api/families/intents/clientTokens.ts';
import { clientTokenScopes, collections, families, webhookTriggers } from '../../api/families/index.ts';
import { webhookTriggers as subscribable, webhooks } from '../../api/families/webhooks/family.ts';

/** Spec §6, plus `transfer` for the transfer objects of split payments (spec §6 rule 4), plus `webhook:status` (CONTRACT §19). */
const TRIGGERS_BEFORE = [
  'bank_account_reject', 'reject', 'refund', 'void', 'chargeback', 'chargeback_reversal', 'automatic_payment',
  'payment', 'processed', 'authorized', 'decline', 'processing_status', 'deposit', 'payment_activation:status',
  'payment_link:status', 'reversal', 'credit', 'transaction:operation', 'transaction:operation:clear', 'transfer',
  'entity:status', 'intent:status', 'webhook:status',
];

/** auth.ts' scopes as they were; kinds that could call nothing are left out (no family names them). */
const SCOPES_BEFORE: Record<string, Array<[string, string]>> = {
  checkout_plugin: [['POST', '/transactions']],
  checkout_page: [['POST', '/transactions']],
  payment_form: [['POST', '/transactions']],
  payment_method_form: [['POST', '/payment_methods']],
  none: [['POST', '/transactions'], ['POST', '/payment_methods']],
};

const sorted = <T>(list: readonly T[]) => [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

t.test('the triggers the families declare are the spec\'s, each once', async (t) => {
  t.same(sorted(webhookTriggers), sorted(TRIGGERS_BEFORE));
  t.equal(new Set(webhookTriggers).size, webhookTriggers.length, 'no trigger twice');
});

t.test('a webhook accepts exactly the collected triggers', async (t) => {
  t.same(subscribable(), webhookTriggers, 'the registry handed its list to the webhooks family');
  const field = webhooks.fields.find((f) => f.store === 'trigger')!;
  t.same(field.enum, webhookTriggers);
});

t.test('the client-token scopes the families declare are the ones auth.ts had', async (t) => {
  t.same(Object.keys(clientTokenScopes).sort(), Object.keys(SCOPES_BEFORE).sort());
  for (const [kind, routes] of Object.entries(SCOPES_BEFORE)) t.same(sorted(clientTokenScopes[kind]), sorted(routes), kind);
});

t.test('every intent kind a family scopes can be put on a client token', async (t) => {
  for (const kind of Object.keys(clientTokenScopes).filter((k) => k !== 'none')) {
    let problem: unknown = null;
    try {
      validateIntent({ [kind]: {} });
    } catch (error) {
      problem = (error as { details?: Record<string, unknown> }).details?.intent;
    }
    t.notMatch(String(problem ?? ''), /Must have exactly one of/, `${kind} is a known intent kind`);
  }
});

t.test('every family is registered once and every collection path is unique', async (t) => {
  t.equal(new Set(families).size, families.length);
  t.equal(new Set(collections.map((c) => c.path)).size, collections.length);
});
