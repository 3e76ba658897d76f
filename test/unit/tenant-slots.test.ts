/**
 * Tenant slots with the worker's concurrency: orgs whose receivers are slow may fill it only up to
 * a budget, so the rest of it stays free for orgs whose receivers answer, however many orgs hang.
 */
import t from 'tap';
import { COMPANIONS_MAX, COMPANIONS_PER_JOB, slowBudget, TenantSlots } from '../../workers/webhooks/tenantSlots.ts';

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

/**
 * Many requests of one org out at once (two worker processes' companions and jobs on a loaded
 * machine) are answered one after another: each waited in line behind those ahead of it, so each
 * takes long, and the oldest request out is old, while the receiver answers all the time.
 */
function burstOfAnswers(slots: TenantSlots, clock: { now: number }) {
  const probe = slots.acquire('org_a');
  return probe.then(async (first) => {
    first!.sending();
    clock.now = 20;
    first!.release(); // answered in 20 ms: the org's receivers answer
    const leaders = [await slots.acquire('org_a'), await slots.acquire('org_a')];
    for (const slot of leaders) slot!.sending();
    const companions = Array.from({ length: 40 }, () => slots.accompany('org_a'));
    for (const slot of companions) slot!.sending();
    // Another org has an attempt here, so org_a is held to its limit of 2.
    await slots.acquire('org_b');
    // The line's answers, 10 ms apart from 250 ms on, each after 230 ms and more.
    for (const slot of companions.slice(0, 20)) {
      clock.now += clock.now < 250 ? 250 - clock.now : 10;
      slot!.release();
    }
    return { leaders, companions };
  });
}

t.test('an org whose answers keep coming is not judged slow by the time its requests wait in line: an attempt over its limit waits, none is deferred', async (t) => {
  const clock = { now: 0 };
  const slots = new TenantSlots(2, () => clock.now, 10);
  const { leaders } = await burstOfAnswers(slots, clock);
  t.ok(clock.now - 20 > 200, 'the oldest request out is older than RESPONSIVE_MS');
  t.ok(slots.answering('org_a'), 'the org still counts as answering: its companions go on');
  const over = slots.acquire('org_a');
  t.equal(leaders[0]!.release(), false, 'the ended attempt hands its slot to the one waiting');
  t.ok(await over, 'the attempt over the limit got its slot instead of being deferred');
});

t.test('once its answers stop, an org is judged by the age of its oldest request again', async (t) => {
  const clock = { now: 0 };
  const slots = new TenantSlots(2, () => clock.now, 10);
  await burstOfAnswers(slots, clock);
  clock.now += 1100; // no answer for a second: the receiver hangs now
  t.notOk(slots.answering('org_a'), 'no longer answering');
  t.equal(await slots.acquire('org_a'), null, 'an attempt over the limit is deferred');
});

t.test('a receiver slow over each request is marked slow by the first answer of a burst, and the answers right behind it keep the mark', async (t) => {
  let now = 0;
  const slots = new TenantSlots(2, () => now, 10);
  const burst = Array.from({ length: 10 }, () => slots.accompany('org_a') ?? null);
  t.ok(burst.every((slot) => slot === null), 'nothing answered yet: no companions');
  const probe = await slots.acquire('org_a');
  probe!.sending();
  now = 10;
  probe!.release();
  const sent = Array.from({ length: 10 }, () => slots.accompany('org_a'));
  for (const slot of sent) slot!.sending();
  now = 2010;
  for (const slot of sent) {
    slot!.release(); // each took 2 s
    now += 5;
  }
  t.notOk(slots.answering('org_a'), 'the org is slow: no more companions');
  await slots.acquire('org_b');
  const leaders = [await slots.acquire('org_a'), await slots.acquire('org_a')];
  t.ok(leaders.every(Boolean), 'within its limit it still gets slots');
  t.equal(await slots.acquire('org_a'), null, 'over its limit it is deferred');
});

/** Answers `count` companions of org_a sent at once, one every `gapMs` from `tookMs` on: a line at the receiver when gapMs > 0. */
function answerCompanions(slots: TenantSlots, clock: { now: number }, count: number, tookMs: number, gapMs: number): void {
  const sent = Array.from({ length: count }, () => slots.accompany('org_a'));
  for (const slot of sent) slot!.sending();
  const start = clock.now;
  sent.forEach((slot, i) => {
    clock.now = start + tookMs + i * gapMs;
    slot!.release();
  });
}

t.test("an org's room for companions shrinks once its answers wait in line, and grows back once they are quick again", async (t) => {
  const clock = { now: 0 };
  const slots = new TenantSlots(2, () => clock.now, 10);
  t.equal(slots.companionRoom('org_a'), COMPANIONS_MAX, 'an org not yet answered has the whole room');
  const probe = await slots.acquire('org_a');
  probe!.sending();
  clock.now = 20;
  probe!.release(); // answered in 20 ms: its receivers answer that fast
  // Five processes' rounds of 200 at once: each answer waits behind those ahead, 5 ms apart.
  answerCompanions(slots, clock, 200, 20, 5);
  const shrunk = slots.companionRoom('org_a');
  t.ok(shrunk < COMPANIONS_MAX / 2, `requests that only waited in line took the room down (${shrunk})`);
  t.ok(shrunk >= COMPANIONS_PER_JOB, 'never below the least room');
  t.ok(slots.answering('org_a'), 'the org still answers: its companions go on, fewer at once');
  // The line gone: answers as quick as the fastest again.
  for (let round = 0; round < 20; round++) answerCompanions(slots, clock, 20, 20, 0);
  t.equal(slots.companionRoom('org_a'), COMPANIONS_MAX, 'quick answers give the room back');
});

t.test('a receiver that takes long over every request, with no line, keeps the whole room for companions', async (t) => {
  const clock = { now: 0 };
  const slots = new TenantSlots(2, () => clock.now, 10);
  const probe = await slots.acquire('org_a');
  probe!.sending();
  clock.now = 150;
  probe!.release();
  // Every answer after 150 ms however many are out: the receiver's own time, not a line.
  for (let round = 0; round < 10; round++) answerCompanions(slots, clock, 100, 150, 0);
  t.equal(slots.companionRoom('org_a'), COMPANIONS_MAX);
});
