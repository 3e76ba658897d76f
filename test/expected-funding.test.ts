/**
 * The funding fields a card payment's plan expects its statement to add (expectedFunding) are the
 * ones the database adds (`transaction_funding_fields_of`), over every combination of type, amount
 * (fees that are exact halves of a cent included), method type, payer-paid fee, timing, delays of
 * the payment and of its account, and start day of the week; where the plan cannot tell, it says
 * so (null) rather than guess. A payment made through the API is stored with the fields expected
 * from its own row as the plan holds it. Then the payment's audit event, taken as its writer built
 * it when the two agree, is the trigger's when they do not: under a test clock, whose date only
 * the database knows.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { expectedFunding } from '../api/families/transactions/expectedFunding.ts';
import { freshDatabase } from './helpers/db.ts';
import { startTestApi } from './helpers/api.ts';

const DAY = 86_400_000;

t.test('the plan expects the fields the database adds, or says it cannot tell', async (t) => {
  const db = createDb(await freshDatabase(t), 1);
  t.teardown(() => db.destroy());
  const cases: Array<{ type: string; data: Record<string, unknown>; account: Record<string, unknown> | null; clock: string }> = [];
  // A Monday at noon, well after now: the statement's date is the clock's, as the plan's is.
  const monday = Date.UTC(2031, 0, 6, 12);
  for (const type of ['payment', 'refund', 'deposit']) {
    for (const amount of [1, 50, 150, 500, 1234, 1500, 49_999, 50_050, 10_000_000, 0, -500, '700']) {
      for (const method of ['card', 'bank_account']) {
        for (const payer of [undefined, true, 'true', false]) {
          for (const timing of ['standard', 'rapid', 'instant']) {
            for (const [own, account] of [[undefined, { processing: { funding: { delay: 1 } } }], [3, { processing: { funding: { delay: '5' } } }],
              ['4', {}], [undefined, {}], [undefined, { processing: 'none' }], [undefined, null]] as const) {
              const day = cases.length % 7;
              cases.push({
                type, account,
                clock: new Date(monday + day * DAY).toISOString(),
                data: { amount, payment_method_type: method, status: 'processed', conv_fee_payer: payer, funding_timing: timing, funding_delay: own },
              });
            }
          }
        }
      }
    }
  }
  // A row already funded, or not processed, gets nothing.
  cases.push({ type: 'payment', account: {}, clock: new Date(monday).toISOString(), data: { amount: 100, status: 'processed', funding_status: 'held' } });
  cases.push({ type: 'payment', account: {}, clock: new Date(monday).toISOString(), data: { amount: 100, status: 'authorized' } });

  const found = await rows<{ n: number; due: boolean; fields: Record<string, unknown> | null }>(db, `
    select c.n::int as n, transaction_funding_due(c.type, c.data) as due,
           case when transaction_funding_due(c.type, c.data) and c.account is not null
                then transaction_funding_fields_of(c.type, c.data, c.account, c.clock) end as fields
      from json_to_recordset(?::json) as c(type text, data jsonb, account jsonb, clock timestamptz, n int)
     order by c.n`,
    [JSON.stringify(cases.map((c, n) => ({ ...c, n })))]);
  t.equal(found.length, cases.length);
  let expected = 0;
  const wrong: unknown[] = [];
  for (const [i, c] of cases.entries()) {
    const plan = expectedFunding({ type: c.type, data: JSON.parse(JSON.stringify(c.data)) }, c.account ?? undefined, new Date(c.clock));
    if (plan === null) continue;
    expected += 1;
    if (!found[i].due || JSON.stringify(plan) !== JSON.stringify(found[i].fields && Object.fromEntries(Object.keys(plan).map((k) => [k, found[i].fields![k]])))
        || Object.keys(found[i].fields!).length !== Object.keys(plan).length) wrong.push({ case: c, plan, database: found[i].fields });
  }
  t.same(wrong.slice(0, 3), [], 'every expectation is what the database adds');
  // Every row the database funds with a positive amount and its account read is expected.
  const due = found.filter((row, i) => row.fields !== null && Number(cases[i].data.amount) > 0).length;
  t.equal(expected, due, `every fundable row is expected (${expected} of ${cases.length})`);
  const processed = { type: 'payment', data: { amount: 100, status: 'processed' } };
  t.equal(expectedFunding(processed, undefined, new Date()), null, 'no account read: cannot tell');
  t.equal(expectedFunding(processed, { processing: { funding: { delay: 'soon' } } }, new Date()), null, 'a delay the database cannot read: cannot tell');
});

t.test('a payment made through the API is stored with the fields its plan expects', async (t) => {
  const api = await startTestApi(t);
  const made = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5,
    payment_method: { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } } } });
  t.equal(made.status, 200, made.status === 200 ? 'paid' : JSON.stringify(made.body));
  const [row] = (await api.db.raw(`select t.type, t.data, a.data as account from transactions t join accounts a on a.id = t.data->>'processing_id' where t.id = ?`,
    [made.body.id])).rows;
  const { fee, funding_status: status, funding_date: date, ...planned } = row.data;
  const expected = expectedFunding({ type: row.type, data: planned }, row.account, new Date());
  t.same(expected, { fee, funding_status: status, funding_date: date }, 'the row as planned, before the statement adds them, gives the fields stored');
  t.same(expected?.fee, 45, '2.9 % of 500 cents is 14.5, rounded up as numeric round does, plus 30');
});

t.test('a payment under a test clock is audited with the date the database gave it', async (t) => {
  const api = await startTestApi(t);
  const paid = async () => {
    const made = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5,
      payment_method: { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } } } });
    t.equal(made.status, 200, made.status === 200 ? 'paid' : JSON.stringify(made.body));
    return made.body.id as string;
  };
  const compare = async (id: string) => {
    const [row] = (await api.db.raw(`select a.data->'changes' as changes, t.data->>'funding_date' as date,
                                            audit_changes(null, audit_fields(to_jsonb(t))) as triggers
                                       from audit_events a join transactions t on t.id = a.data->>'object_id' where t.id = ?`, [id])).rows;
    t.same(row.changes, row.triggers, 'the changes the trigger computes from the stored row');
    t.same(row.changes.funding_date, [null, row.date]);
    t.same(row.changes.fee, [null, 45]);
    return row.date as string;
  };
  const today = await compare(await paid());
  const { org_id: org, environment } = (await api.db.raw(`select org_id, environment from transactions order by created_at desc limit 1`)).rows[0];
  await api.db.raw(`insert into test_clocks (org_id, environment, now) values (?, ?, now() + interval '40 days')`, [org, environment]);
  const later = await compare(await paid());
  t.ok(Date.parse(later) - Date.parse(today) >= 30 * DAY, `dated by the test clock (${today} → ${later})`);
});
