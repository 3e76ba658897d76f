/**
 * `npm run bench:chaos`: the fault campaign of test/chaos-campaign.ts at a benchmark's size — a
 * steady load of card payments and refunds with webhook deliveries to a loopback receiver, web,
 * worker, reporting and primary-database processes killed with SIGKILL at seeded random moments
 * (the standby promoted after the primary's), everything restarted — then the end checks. Prints
 * the seed, the faults and the figures; exits 1 when a check fails.
 *
 * Env: BENCH_CHAOS_SECONDS (default 120), BENCH_CHAOS_RATE (card payments offered per second,
 * default 300), BENCH_CHAOS_FAULTS (default 8), BENCH_CHAOS_SEED (default random),
 * BENCH_CHAOS_WEBS (default 2), BENCH_CHAOS_WORKERS (default 2), BENCH_CHAOS_REFUND_SHARE
 * (refunds per payment, default 0.2), BENCH_CHAOS_CONCURRENCY (the most requests out at once,
 * default 256; a payment due beyond it is counted, not sent), BENCH_CHAOS_DIR (keep the servers' data and the processes'
 * logs there; default a temp directory, removed), BENCH_CHAOS_PROMOTE_AFTER (ms from a primary's
 * kill to the standby's promotion, default 1000), BENCH_CHAOS_REJOIN_AFTER (ms from the promotion
 * to the dead primary rebuilding itself as the new standby, default 2000),
 * BENCH_CHAOS_RESTART_CHECK_AFTER (ms from a process's kill to waiting for its restart, default 1000). Results: stdout and bench/results/chaos.json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomInt } from 'node:crypto';
import { campaignProblems, describeCampaign, runCampaign } from '../test/chaos-campaign.ts';
import { positive, resultsDir } from './harness.ts';

const seed = process.env.BENCH_CHAOS_SEED ? positive('BENCH_CHAOS_SEED', 1) : randomInt(1, 2 ** 31);
const options = {
  seed,
  seconds: positive('BENCH_CHAOS_SECONDS', 120),
  rate: positive('BENCH_CHAOS_RATE', 300),
  faults: positive('BENCH_CHAOS_FAULTS', 8, true),
  webs: positive('BENCH_CHAOS_WEBS', 2),
  workers: positive('BENCH_CHAOS_WORKERS', 2),
  refundShare: positive('BENCH_CHAOS_REFUND_SHARE', 0.2, true),
  maxInFlight: positive('BENCH_CHAOS_CONCURRENCY', 256),
  workDir: process.env.BENCH_CHAOS_DIR || undefined,
  promoteAfterMs: positive('BENCH_CHAOS_PROMOTE_AFTER', 1000, true),
  rejoinAfterMs: positive('BENCH_CHAOS_REJOIN_AFTER', 2000, true),
  restartCheckAfterMs: positive('BENCH_CHAOS_RESTART_CHECK_AFTER', 1000, true),
  log: (line: string) => console.error(`chaos: ${line}`),
};
console.log(`bench:chaos BENCH_CHAOS_SEED=${seed} BENCH_CHAOS_SECONDS=${options.seconds} BENCH_CHAOS_RATE=${options.rate} BENCH_CHAOS_FAULTS=${options.faults} BENCH_CHAOS_PROMOTE_AFTER=${options.promoteAfterMs} BENCH_CHAOS_REJOIN_AFTER=${options.rejoinAfterMs} BENCH_CHAOS_RESTART_CHECK_AFTER=${options.restartCheckAfterMs}`);
const result = await runCampaign(options);
for (const line of describeCampaign(result)) console.log(line);
const problems = campaignProblems(result);
console.log(problems.length ? `\nFAIL:\n- ${problems.join('\n- ')}` : '\nPASS: nothing acknowledged lost, no 500, every event delivered, §14 holds, the mirror equals the database');
fs.mkdirSync(resultsDir, { recursive: true });
const file = path.join(resultsDir, 'chaos.json');
fs.writeFileSync(file, `${JSON.stringify({ benchmark: 'chaos', date: new Date().toISOString(), node: process.version, ...result, problems }, null, 2)}\n`);
console.log(`results: ${path.relative(process.cwd(), file)}`);
process.exit(problems.length ? 1 : 0);
