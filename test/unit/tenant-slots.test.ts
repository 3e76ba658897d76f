/**
 * Tenant slots with the worker's concurrency: orgs whose receivers are slow may fill it only up to
 * a budget, so the rest of it stays free for orgs whose receivers answer, however many orgs hang.
 */
import t from 'tap';
import { slowBudget, TenantSlots } from '../../workers/webhooks/tenantSlots.ts';

t.test('the budget leaves a quarter of the concurrency, at least one slot, to orgs that answer', async (t) => {
  t.same([1, 2, 4, 10, 16].map(slowBudget), [1, 1, 3, 7, 12]);
});

t.test('many slow orgs share the budget; an org that answers still gets a slot', async (t) => {
  let now = 0;
  const slots = new TenantSlots(2, () => now, 10);
  const hanging = [];
  for (let org = 0; org < 7; org++) hanging.push(await slots.acquire(`slow_${org}`));
  t.ok(hanging.every(Boolean), 'first attempts of unknown orgs start at once: nothing is known of them yet');
  for (const slot of hanging) slot!.sending();
  now = 500; // their attempts have hung past RESPONSIVE_MS: the orgs are slow
  t.equal(await slots.acquire('slow_0'), null, 'a slow org with room of its own is deferred once the budget is spent');
  const fast = await slots.acquire('fast');
  t.ok(fast, 'an org not known to be slow gets a slot beyond the budget');
  fast!.sending();
  now = 600;
  fast!.release(); // answered in 100 ms
  t.notOk(slots.hasRoom('slow_1'), 'hasRoom agrees for a slow org');
  t.ok(slots.hasRoom('other'), '…and for another');

  now = 5000;
  for (const slot of hanging) slot!.release(); // each took 5 s: its org stays slow for a while
  t.ok(await slots.acquire('slow_1'), 'under the budget again, a slow org may start an attempt');
  now = 70_000; // long after: the memory of a slow attempt has faded
  const quick = await slots.acquire('slow_2');
  t.ok(quick, 'an org whose slow attempts are long past is not held back');
  quick!.release();
});

t.test('an attempt over its org\'s limit waits for the slot however long the one ahead takes to be opened: only a request out counts against the receiver', async (t) => {
  let now = 0;
  const slots = new TenantSlots(1, () => now, 8);
  const opening = await slots.acquire('org_a');
  now = 5000; // still being opened in the database: its request has not gone out
  const waiting = slots.acquire('org_a');
  t.equal(opening!.release(), false, 'the ended attempt hands its slot over');
  const next = await waiting;
  t.ok(next, 'the waiting attempt got the slot instead of being deferred');
  next!.sending();
  now = 5100;
  const third = slots.acquire('org_a');
  now = 5300; // the request out has not answered in RESPONSIVE_MS: the org's receivers are slow
  t.equal(await third, null, 'a waiting attempt is turned away once the request ahead of it is slow');
});

t.test('without a capacity, only the per-org limit applies', async (t) => {
  let now = 0;
  const slots = new TenantSlots(1, () => now);
  const taken = [];
  for (let org = 0; org < 20; org++) taken.push(await slots.acquire(`org_${org}`));
  now = 10_000;
  t.ok(taken.every(Boolean));
  t.ok(await slots.acquire('org_20'), 'no shared budget');
});
