/**
 * A reporting process (reporting/main.ts as a child process) killed with SIGKILL while changes flow:
 * payments commit every few milliseconds, some of them changing or deleting earlier ones, so the
 * process dies with passes in flight and changes copied past the position it last recorded. The
 * next process resumes from that position and answers, from the mirror and from the rollup alike,
 * exactly what Postgres holds: nothing skipped, nothing counted twice.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { covers, formatSnapshot, parseSnapshot } from '../reporting/feed.ts';
import { TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, reservePort, tempDataDir } from './reporting-support.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const dataDir = tempDataDir(t);
const tenant = { orgId: 'org_crash', environment: 'test' };
const REGIONS = ['eu', 'us', 'apac'];

/** Payments made the day before: the flow changes them too, so the rollup has another day to recompute than today. */
const YESTERDAYS = 200;
let made = 0;
/**
 * One commit: `count` new payments (the first YESTERDAYS dated a day back), and (every other
 * commit) a change of one of yesterday's amount and region, or its deletion.
 */
async function commitChanges(db: Db, count: number): Promise<void> {
  await db.transaction(async (trx) => {
    const ids = Array.from({ length: count }, () => `txn_crash${String(made++).padStart(7, '0')}`);
    await rows(trx, `insert into transactions (id, org_id, environment, type, data, created_at)
      select id, ?, ?, case when n % 4 = 0 then 'refund' else 'payment' end,
             jsonb_build_object('amount', 100 + n, 'status', 'processed', 'attrs', jsonb_build_object('region', (?::text[])[1 + n % 3])),
             now() - case when ? then interval '1 day' else interval '0' end
        from unnest(?::text[]) with ordinality as r(id, n)`,
    [tenant.orgId, tenant.environment, REGIONS, made <= YESTERDAYS, ids]);
    if (made <= YESTERDAYS || made % 2 === 1) return;
    const earlier = `txn_crash${String(made % YESTERDAYS).padStart(7, '0')}`;
    if (made % 10 === 0) await rows(trx, 'delete from transactions where id = ?', [earlier]);
    else await rows(trx, `update transactions set data = data || jsonb_build_object('amount', 7000 + ?::int, 'attrs', jsonb_build_object('region', 'us')) where id = ?`, [made, earlier]);
  });
}

/** What Postgres holds, as the queries below group it. */
async function truth(): Promise<{ byType: unknown[]; byRegion: unknown[] }> {
  const byType = await rows<{ type: string; count: number; total: string }>(db, `select type, count(*)::int as count, sum((data->>'amount')::bigint)::text as total
    from transactions where org_id = ? group by type order by type`, [tenant.orgId]);
  const byRegion = await rows<{ region: string; count: number; total: string }>(db, `select data->'attrs'->>'region' as region, count(*)::int as count, sum((data->>'amount')::bigint)::text as total
    from transactions where org_id = ? group by 1 order by 1`, [tenant.orgId]);
  return {
    byType: byType.map((row) => ({ type: row.type, count: row.count, 'sum(amount)': Number(row.total) / 100 })),
    byRegion: byRegion.map((row) => ({ 'attrs[region]': row.region, count: row.count, 'sum(amount)': Number(row.total) / 100 })),
  };
}

interface Child {
  process: ChildProcess;
  url: string;
  output: string[];
}

function startChild(port: number): Child {
  // The defaults of `npm start`, but for the port and the secret.
  const child = spawn(process.execPath, [path.join(projectRoot, 'reporting/main.ts')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir, REPORTING_PORT: String(port), REPORTING_SECRET: TEST_REPORTING_SECRET, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { process: child, url: `http://127.0.0.1:${port}`, output };
}

async function health(child: Child): Promise<Record<string, unknown> | null> {
  try {
    const res = await fetch(`${child.url}/healthz`, { headers: TEST_REPORTING_AUTH });
    return res.status === 200 ? await res.json() as Record<string, unknown> : null;
  } catch {
    return null;
  }
}

async function query(child: Child, fields: string, groupBy: string): Promise<{ values: unknown[]; table: string }> {
  const res = await fetch(`${child.url}/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
    body: JSON.stringify({ tenant, version: 'v1', params: [['fields', fields], ['group_by', groupBy], ['order_by', groupBy]], snapshot: formatSnapshot(await positionNow(db)) }),
  });
  const body = await res.json() as { values: unknown[] };
  if (res.status !== 200) throw new Error(`query: ${res.status} ${JSON.stringify(body)}`);
  return { values: body.values, table: /desc="([^"]*)"/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? '' };
}

t.test('a process killed while changes flow is resumed from its recorded position with nothing lost or counted twice', async (t) => {
  await commitChanges(db, YESTERDAYS);
  const first = startChild(await reservePort());
  const led = await eventually(() => health(first), (h) => h?.role === 'leader', 90_000, 50);
  t.equal(led?.role, 'leader', 'the first process leads');

  // A steady flow; the first process is killed at its end, once it has copied changes past its
  // rollup's position (what it records, so what a restart resumes from). Nothing is committed
  // after the kill: the second process's only sign of those changes is where the first one stopped.
  let flowing = true;
  const flow = (async () => {
    while (flowing) {
      await commitChanges(db, 5);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  })();
  await eventually(() => health(first), (h) => Number(h?.rows_mirrored) > 300, 30_000, 20);
  const ahead = await eventually(() => health(first), (h) => h !== null && h.position !== h.rollup_position, 30_000, 5);
  flowing = false;
  await flow;
  const exited = new Promise((resolve) => first.process.once('exit', resolve));
  first.process.kill('SIGKILL');
  await exited;
  t.ok(made > 400, `changes kept coming until the kill (${made} payments made)`);

  const second = startChild(await reservePort());
  const resumed = await eventually(() => health(second), (h) => h?.role === 'leader', 90_000, 50);
  t.equal(resumed?.role, 'leader', 'the second process takes over');
  const expected = await truth();
  const byType = await query(second, 'type,count,sum(amount)', 'type');
  t.match(byType.table, /^rollup/, 'by type: answered from the rollup');
  t.same(byType.values, expected.byType, 'the rollup holds every change once');
  const byRegion = await query(second, 'attrs[region],count,sum(amount)', 'attrs[region]');
  t.equal(byRegion.table, 'mirror', 'by region: answered from the mirror');
  t.same(byRegion.values, expected.byRegion, 'the mirror holds every change once, each at its latest version');

  const resuming = second.output.join('').split('\n').filter((line) => line.includes('"mirror resuming"')).map((line) => JSON.parse(line) as { position: string });
  t.equal(resuming.length, 1, 'it resumed rather than rebuilt');
  const from = parseSnapshot(resuming[0]?.position ?? '')!;
  const killedAt = parseSnapshot(String(ahead?.position))!;
  t.ok(covers(killedAt, from) && formatSnapshot(from) !== formatSnapshot(killedAt), `from a position (${formatSnapshot(from)}) behind what the first had copied when killed (${formatSnapshot(killedAt)}): those changes were copied twice`);
  t.ok(Number((await health(second))?.rows_mirrored) < made, 'from the recorded position, not from the start');

  // Stopped cleanly it records its position: a third process copies nothing again.
  const stopped = new Promise<number | null>((resolve) => second.process.once('exit', (code) => resolve(code)));
  second.process.kill('SIGTERM');
  t.equal(await stopped, 0, 'SIGTERM: the second process stops cleanly');
  const third = startChild(await reservePort());
  await eventually(() => health(third), (h) => h?.role === 'leader', 90_000, 50);
  t.same((await query(third, 'type,count,sum(amount)', 'type')).values, expected.byType, 'a third process answers the same');
  t.equal(Number((await health(third))?.rows_mirrored), 0, 'having copied nothing again');
});
