/**
 * A card payment's one statement writes the audit events of its card and its transaction itself
 * (api/db/auditStatement.ts), and the audit trigger leaves that statement's rows
 * alone: each is audited exactly once, with the fields the trigger would have written, added by
 * the database on the way in (fee, funding date) included; another statement in the same
 * transaction is still the trigger's; a statement that fails leaves none; disabling a table's
 * audit trigger turns off both. Which of the two wrote an event is read from a test-only trigger
 * on audit_events that notes its trigger depth: 1 for the payment's own statement, 2 for the
 * audit trigger inside it.
 */
import t from 'tap';
import { runAudited } from '../api/db/auditContext.ts';
import { auditRows, createdChanges } from '../api/db/auditStatement.ts';
import { insertPayment } from '../api/families/transactions/repository.ts';
import { families } from '../api/families/index.ts';
import { newId } from '../api/ids.ts';
import { startTestApi } from './helpers/api.ts';
import { BY_STATEMENT, BY_TRIGGER, noteAuditWriters } from './helpers/auditWriters.ts';

const api = await startTestApi(t);
await noteAuditWriters(api.db);
const keyPrefix = api.key.slice(0, api.key.length - 24);

async function eventsOf(objectId: string): Promise<Array<{ data: Record<string, any>; depth: number }>> {
  return (await api.db.raw(`select a.data, w.depth from audit_events a left join test_audit_writers w on w.object_id = a.data->>'object_id'
                             where a.data->>'object_id' = ?`, [objectId])).rows;
}

/** What the trigger computes for the row as stored now. */
async function triggersChanges(table: string, id: string): Promise<unknown> {
  return (await api.db.raw(`select audit_changes(null, audit_fields(to_jsonb(r))) as changes from ${table} r where id = ?`, [id])).rows[0].changes;
}

const customer = (await api.request('POST', '/customers', { json: { name: 'Payer' } })).body;
/** Fields whose keys, values and nesting exercise what the audit drops and keeps. */
const ATTRS = {
  note: 'hash browns, no secret sauce',
  password_hint: 'dropped by its key',
  nested: { api_secret: 'dropped', kept: [1, null, { Hash: 'dropped', fine: 'é' }] },
  empty: null,
};
/** A key with a letter outside ASCII: whether it names a secret is the database's to judge, so it computes the changes. */
const ATTRS_NOT_ASCII = { ...ATTRS, 'ſecret': 'the long s matches s or not as PostgreSQL says' };

function payment(method: Record<string, unknown>, attrs: unknown = ATTRS) {
  return { type: 'payment', amount: 12.34, customer_id: customer.id, description: 'Ünïcode "quoted" \\ text', attrs, payment_method: method };
}
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '987' } };
const BANK = { type: 'bank_account', bank_account: { routing_number: '036001808', account_number: '123456789', account_type: 'checking' } };

t.test('a card payment through the one statement is audited once, by that statement, with the trigger\'s fields', async (t) => {
  const paid = await api.request('POST', '/transactions', { json: payment(CARD), headers: { 'X-Request-Id': 'lb-statement-1' } });
  t.equal(paid.status, 200, paid.status === 200 ? 'paid' : JSON.stringify(paid.body));
  const methodId = paid.body.payment_method_id;
  for (const [table, id, objectType] of [['transactions', paid.body.id, 'transaction'], ['payment_methods', methodId, 'payment_method']]) {
    const events = await eventsOf(id);
    t.equal(events.length, 1, `${objectType}: exactly one event`);
    t.equal(events[0].depth, BY_STATEMENT, `${objectType}: written by the payment's statement`);
    t.match(events[0].data, { action: 'create', object_type: objectType, object_id: id, actor: { type: 'secret_key', key_prefix: keyPrefix }, request_id: 'lb-statement-1', ip: /127\.0\.0\.1/ });
    t.same(events[0].data.changes, await triggersChanges(table, id), `${objectType}: the changes the trigger computes from the stored row`);
  }
  const [txn] = await eventsOf(paid.body.id);
  t.match(txn.data.changes, { amount: [null, 1234], fee: [null, Number], funding_status: [null, 'pending'], funding_date: [null, String] }, 'fields the database added are there');
  t.notOk('password_hint' in txn.data.changes.attrs[1] || 'api_secret' in txn.data.changes.attrs[1].nested, 'secret-named keys dropped at every depth');
  t.same(txn.data.changes.attrs[1].nested.kept, [1, null, { fine: 'é' }]);
  t.equal(txn.data.changes.empty, undefined);
  const [method] = await eventsOf(methodId);
  const dump = JSON.stringify(method.data);
  t.notOk(/4242424242424242|sealed|card_code|"987"|fingerprint/.test(dump), 'no full number, sealed copy, card code or fingerprint');
  t.match(dump, /xxxxxxxxxxxx4242/);

  const viaApi = (await api.request('GET', `/audit_events?object_id=${paid.body.id}`)).body.values;
  t.match(viaApi, [{ action: 'create', object_type: 'transaction', request_id: 'lb-statement-1', changes: { amount: [null, 12.34] } }], 'listed as any other event');
});

t.test('the same payment audited by the trigger instead is the same event', async (t) => {
  for (const [method, attrs] of [[CARD, ATTRS], [BANK, ATTRS], [CARD, ATTRS_NOT_ASCII]] as const) {
    const made: Array<{ events: Array<{ data: Record<string, any>; depth: number }>; comparable: unknown }> = [];
    for (const inStatement of [true, false]) {
      auditRows.inStatement = inStatement;
      try {
        const paid = await api.request('POST', '/transactions', { json: payment(method, attrs), headers: { 'X-Request-Id': 'lb-compare' } });
        t.equal(paid.status, 200, paid.status === 200 ? 'paid' : JSON.stringify(paid.body));
        const events = [...await eventsOf(paid.body.id), ...await eventsOf(paid.body.payment_method_id)];
        // The two payments differ only by their ids.
        const text = JSON.stringify(events.map((e) => e.data)).replaceAll(paid.body.id, 'TXN').replaceAll(paid.body.payment_method_id, 'PM');
        made.push({ events, comparable: JSON.parse(text) });
      } finally {
        auditRows.inStatement = true;
      }
    }
    const [byStatement, byTrigger] = made;
    t.same(byStatement.events.map((e) => e.depth), [BY_STATEMENT, BY_STATEMENT], `${method.type}: the statement's`);
    t.same(byTrigger.events.map((e) => e.depth), [BY_TRIGGER, BY_TRIGGER], `${method.type}: the trigger's`);
    t.same(byStatement.comparable, byTrigger.comparable, `${method.type}: one format whichever writes it`);
  }
});

t.test('a customer created on its own is audited by its statement with the event the trigger writes', async (t) => {
  const made: Array<{ id: string; event: { data: Record<string, any>; depth: number }; eventId: string }> = [];
  for (const inStatement of [true, true, false]) {
    auditRows.inStatement = inStatement;
    try {
      const created = await api.request('POST', '/customers', { json: { name: 'Ünïcode "quoted"', email: 'c@example.com', attrs: ATTRS }, headers: { 'X-Request-Id': 'lb-customer' } });
      t.equal(created.status, 200, created.status === 200 ? 'created' : JSON.stringify(created.body));
      const [event] = await eventsOf(created.body.id);
      const { id: eventId } = (await api.db.raw(`select id from audit_events where data->>'object_id' = ?`, [created.body.id])).rows[0];
      made.push({ id: created.body.id, event, eventId });
    } finally {
      auditRows.inStatement = true;
    }
  }
  const [first, second, byTrigger] = made;
  t.same([first.event.depth, second.event.depth, byTrigger.event.depth], [BY_STATEMENT, BY_STATEMENT, BY_TRIGGER]);
  const comparable = (m: typeof first) => JSON.parse(JSON.stringify(m.event.data).replaceAll(m.id, 'CUS'));
  t.same(comparable(first), comparable(byTrigger), 'one event whichever writes it');
  t.match(first.event.data, { actor: { type: 'secret_key', key_prefix: keyPrefix }, request_id: 'lb-customer', ip: /127\.0\.0\.1/ });
  t.notOk('password_hint' in first.event.data.changes.attrs[1], 'secret-named keys dropped');
  for (const { eventId } of made) t.match(eventId, /^aud_[0-9A-Za-z]{24}$/, 'the id format of every object');
  t.ok(first.eventId < second.eventId, `the statement's ids sort as they were written (${first.eventId} < ${second.eventId})`);
});

t.test('every audited family table\'s row is its type and data besides the bookkeeping columns', async (t) => {
  // The statements take the writer's event when the stored type and data are those sent
  // (auditCreatedSql): a column of its own on such a table would go unchecked.
  const audited = families.map((family) => family.table).filter((table) => table !== 'audit_events');
  const found = await api.db.raw(`select c.relname as table, array_agg(a.attname::text order by a.attname) as columns
                                    from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                                   where c.relname = any(?::text[]) and exists (select from pg_trigger g where g.tgrelid = c.oid and g.tgname = c.relname || '_audit_insert')
                                   group by c.relname`, [audited]);
  t.ok(found.rows.length >= 12, `the audited family tables (${found.rows.map((r: { table: string }) => r.table).join(', ')})`);
  for (const row of found.rows as Array<{ table: string; columns: string[] }>) {
    t.same(row.columns, ['created_at', 'data', 'environment', 'id', 'modified_at', 'org_id', 'type'], row.table);
  }
});

t.test('a created row the database changed on the way in is audited as it was stored', async (t) => {
  await api.db.raw(`
    create function test_add_on_the_way() returns trigger language plpgsql as $$
    begin
      if new.data->>'name' = 'Changed on the way' then new.data := new.data || '{"added": 1, "email": "changed@example.com"}'; end if;
      return new;
    end $$;
    create trigger test_add_on_the_way before insert on accounts for each row execute function test_add_on_the_way();`);
  try {
    const created = await api.request('POST', '/customers', { json: { name: 'Changed on the way', email: 'sent@example.com' } });
    t.equal(created.status, 200);
    const [event] = await eventsOf(created.body.id);
    t.equal(event.depth, BY_STATEMENT, 'written by the statement');
    t.same(event.data.changes, await triggersChanges('accounts', created.body.id), 'the changes the trigger computes from the stored row');
    t.same(event.data.changes.email, [null, 'changed@example.com']);
  } finally {
    await api.db.raw('drop trigger test_add_on_the_way on accounts; drop function test_add_on_the_way()');
  }
});

t.test('a created row the database only added fields to is audited with them, secret-named ones dropped', async (t) => {
  await api.db.raw(`
    create function test_only_add() returns trigger language plpgsql as $$
    begin
      if new.data->>'name' = 'Plain added' then new.data := new.data || '{"added": {"n": 1, "list": [null, "x"]}, "none": null}'; end if;
      if new.data->>'name' = 'Secret added' then new.data := new.data || '{"api_secret": "gone", "extra": {"password": "gone", "kept": 2}}'; end if;
      return new;
    end $$;
    create trigger test_only_add before insert on accounts for each row execute function test_only_add();`);
  try {
    for (const name of ['Plain added', 'Secret added']) {
      const created = await api.request('POST', '/customers', { json: { name, email: 'sent@example.com' } });
      t.equal(created.status, 200);
      const [event] = await eventsOf(created.body.id);
      t.equal(event.depth, BY_STATEMENT, `${name}: written by the statement`);
      t.same(event.data.changes, await triggersChanges('accounts', created.body.id), `${name}: the changes the trigger computes from the stored row`);
      t.match(event.data, { actor: { type: 'secret_key', key_prefix: keyPrefix }, action: 'create', object_id: created.body.id });
    }
    const [plain] = await eventsOf((await api.db.raw(`select id from accounts where data->>'name' = 'Plain added'`)).rows[0].id);
    t.same(plain.data.changes.added, [null, { n: 1, list: [null, 'x'] }]);
    t.notOk('none' in plain.data.changes, 'a JSON null added is left out');
    const [secret] = await eventsOf((await api.db.raw(`select id from accounts where data->>'name' = 'Secret added'`)).rows[0].id);
    t.notOk('api_secret' in secret.data.changes, 'a secret-named field added is dropped');
    t.same(secret.data.changes.extra, [null, { kept: 2 }], 'and a secret-named key inside one');
  } finally {
    await api.db.raw('drop trigger test_only_add on accounts; drop function test_only_add()');
  }
});

t.test('the builder computes what the trigger computes from the same fields, or leaves them to the database', async (t) => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['payment', { amount: 1234, fee: 0.5, big: 1e21, tiny: -0, list: [], none: null, gone: undefined, attrs: ATTRS }],
    ['card', { card: { card_number: 'xxxx4242', sealed_number: 'v2.x', fingerprint: 'f' }, account_id: 'acct_1' }],
    ['customer', { type: 'processing', name: 'Quote " backslash \\ tab \t nul-free \u0001', 'key "with" \\ marks': [{ Secret_Key: 1, ok: true }] }],
    ['webhook', { sender_secret: 'gone', url: 'https://example.com', PASSWORD: 'gone', nested: { card_code: '123', deeper: { hashed: 'x', kept: 'y' } } }],
    ['entity', {}],
    // Plain fields (no secret, nothing escaped, ASCII only) are written whole in one go.
    ['payment', { amount: 1234, big: 1e21, tiny: -0, list: [], none: null, gone: undefined, nan: Number.NaN, nested: { a: [1, null, { b: 'x' }] }, 7: 'a key of digits' }],
    ['payment', { amount: 1, when: new Date(0), later: { when: new Date(1000) } }],
    ['payment', { amount: 1, 'a "quoted" key': null, 'a \\ key': null }],
  ];
  for (const [type, data] of cases) {
    const built = createdChanges(type, data);
    t.ok(built, `${type}: built`);
    const [trigger] = (await api.db.raw(`select audit_changes(null, audit_fields(jsonb_build_object('type', ?::text, 'data', ?::jsonb))) as changes,
                                                ?::jsonb as built, ?::text[] as keys`, [type, JSON.stringify(data), built!.changes, built!.keys])).rows;
    t.same(trigger.built, trigger.changes, `${type}: the trigger's changes`);
    t.same([...trigger.keys].sort(), Object.keys(JSON.parse(JSON.stringify({ type, ...data }))).sort(), `${type}: the keys of the fields sent`);
  }
  t.equal(createdChanges('payment', { attrs: { 'ſecret': 1 } }), null, 'a key outside ASCII is the database\'s');
  t.ok(createdChanges('payment', { attrs: { note: 'café' } }), 'a value outside ASCII is not');
});

t.test('another statement of the same transaction is the trigger\'s; a failed statement leaves no event', async (t) => {
  const tenant = { orgId: 'acme', environment: 'test' } as const;
  const context = { actor: { type: 'secret_key' as const, key_prefix: keyPrefix }, request_id: 'lb-tx', ip: '127.0.0.1' };
  const txnData = { amount: 500, currency: 'USD', status: 'pending', customer_id: customer.id };
  const write = (methodId: string, txnId: string) => ({
    method: { id: methodId, type: 'card', data: { account_id: customer.id, card: { expiry: '12/35', card_number: 'xxxxxxxxxxxx4242' } } },
    transaction: { id: txnId, type: 'payment', data: { ...txnData, payment_method_id: methodId } },
    operations: [],
    events: [],
    jobs: [],
  }) as unknown as Parameters<typeof insertPayment>[2];
  const [methodId, txnId, laterId] = [newId('pm'), newId('txn'), newId('pm')];
  await runAudited(context, () => api.db.transaction(async (tx) => {
    await insertPayment(tx, tenant, write(methodId, txnId));
    await tx.raw(`insert into payment_methods (id, org_id, environment, type, data) values (?, 'acme', 'test', 'card', '{"account_id": "x"}')`, [laterId]);
  }));
  t.same((await eventsOf(methodId)).map((e) => e.depth), [BY_STATEMENT]);
  t.same((await eventsOf(txnId)).map((e) => e.depth), [BY_STATEMENT]);
  t.same((await eventsOf(laterId)).map((e) => [e.depth, e.data.request_id]), [[BY_TRIGGER, 'lb-tx']], 'the next statement is audited by the trigger, once');

  const failedTxn = newId('txn');
  await t.rejects(runAudited(context, () => insertPayment(api.db, tenant, write(methodId, failedTxn))), /duplicate key/, 'the card exists already');
  t.same(await eventsOf(failedTxn), [], 'nothing of the failed statement');
});

t.test('a disabled audit trigger turns off the audit of created rows, whichever writes them', async (t) => {
  await api.db.raw('alter table transactions disable trigger transactions_audit_insert');
  try {
    const paid = await api.request('POST', '/transactions', { json: payment(CARD, null) });
    t.equal(paid.status, 200, paid.status === 200 ? 'paid' : JSON.stringify(paid.body));
    t.same(await eventsOf(paid.body.id), [], 'the transaction: none');
    t.equal((await eventsOf(paid.body.payment_method_id)).length, 1, 'its card, whose trigger is on: one');
  } finally {
    await api.db.raw('alter table transactions enable trigger transactions_audit_insert');
  }
});
