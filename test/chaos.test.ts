/**
 * The fault campaign of bench:chaos at a test's size (CONTRACT §26): under a modest load of card
 * payments, refunds and webhook deliveries, kill -9 a reporting process, a worker, a web and the
 * primary database (the standby promoted, the dead primary rejoining as the new standby), each
 * restarted by settle up's supervisor; then nothing acknowledged is lost, no 500, every event is
 * delivered, §14's identity holds and the reporting mirror equals the database
 * (test/chaos-campaign.ts). The seed is fixed, so a failure replays with the printed
 * CHAOS_SEED; the waits are bounded polls for states, the figures only printed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { campaignProblems, describeCampaign, FAULT_KINDS, runCampaign } from './chaos-campaign.ts';

const seed = Number(process.env.CHAOS_SEED ?? 20261128);

t.test('web, worker, reporting and primary killed under load: nothing acknowledged lost, every event delivered, money and mirror agree', async (t) => {
  t.comment(`CHAOS_SEED=${seed}`);
  // The servers' data and every process's log, kept when a check fails.
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-chaos-test-'));
  const result = await runCampaign({
    workDir,
    seed,
    seconds: 16,
    rate: 8,
    faults: FAULT_KINDS.length,
    webs: 2,
    workers: 1,
    // A killed worker's jobs go to its successor this soon after it falls silent.
    workerEnv: { WORKER_DEAD_AFTER: '2s' },
    log: (line) => t.comment(line),
  });
  for (const line of describeCampaign(result)) t.comment(line);
  t.same([...new Set(result.faults.map((f) => f.kind))].sort(), [...FAULT_KINDS].sort(), 'every kind of fault was injected');
  t.equal(result.promotions.length, 1, 'the standby was promoted once');
  t.not(result.promotions[0]?.apiAgainMs, null, 'a request sent after the promotion was acknowledged');
  t.not(result.promotions[0]?.rejoinedMs, null, 'the dead primary came back as a synchronous standby');
  t.ok(result.acknowledged > 0 && result.refundsAcknowledged > 0, 'payments and refunds were acknowledged');
  const problems = campaignProblems(result);
  if (problems.length) t.comment(`the processes' logs are in ${workDir}`);
  else fs.rmSync(workDir, { recursive: true, force: true });
  t.same(problems, [], `seed ${seed}: no acknowledged change lost, no 500, every event delivered, §14 holds, the mirror equals the database`);
});
