/**
 * `settle trigger <trigger>`: for every trigger it can fire, what it makes through the API of a
 * running Settle produces that trigger's event (recorded in the outbox, so webhooks get it).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { FIREABLE_TRIGGERS, fireTrigger } from '../bin/trigger.ts';
import { webhookTriggers } from '../api/families/index.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t, { SETTLE_PROCESSING_DELAY: '50' });
await startTestWorker(t, api.databaseUrl, { SETTLE_PROCESSING_DELAY: '50', WORKER_POLL_INTERVAL: '50' });
await api.request('POST', '/processing_accounts', { json: { name: 'Default' } });

function eventSeen(trigger: string, since: Date, ms = 8000): Promise<boolean> {
  return eventually(async () => Boolean(await api.db('events').where({ trigger }).andWhere('created_at', '>=', since).first()), Boolean, ms, 50);
}

t.test('every webhook trigger of the spec can be fired', async (t) => {
  t.same(webhookTriggers.filter((trigger) => !FIREABLE_TRIGGERS.includes(trigger)), []);
});

for (const trigger of FIREABLE_TRIGGERS) {
  t.test(`${trigger}: fired through the API`, async (t) => {
    const since = new Date(Date.now() - 1000);
    const fired = await fireTrigger({ url: api.url, key: api.key }, trigger);
    t.ok(Object.keys(fired.ids).length > 0, JSON.stringify(fired.ids));
    t.ok(await eventSeen(trigger, since), `a ${trigger} event was recorded`);
  });
}

t.test('the CLI prints the ids and refuses unknown triggers', async (t) => {
  const run = (args: string[]) => new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin/settle.ts'), 'trigger', ...args], { env: { ...process.env, LOG_LEVEL: 'silent' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
  const ok = await run(['processing_status', '--url', api.url, '--key', api.key]);
  t.equal(ok.code, 0, ok.out);
  t.match(ok.out, /^processing_account acct_\w+$/m);
  t.match(ok.out, /fired processing_status/);
  const unknown = await run(['nonsense', '--url', api.url, '--key', api.key]);
  t.equal(unknown.code, 1);
  t.match(unknown.out, /unknown trigger nonsense/);
  t.equal((await run([])).code, 2, 'usage error');
});
