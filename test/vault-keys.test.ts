/**
 * The vault key on more than one machine: the database records which key its sealed values use; a
 * process with another key, or none, refuses to start with one line naming SETTLE_VAULT_KEY; and a
 * rotation re-seals every sealed value under a new key, online and resumably, the old key
 * accepted until it finishes.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import t, { type Test } from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { createTestKey } from './helpers/keys.ts';
import { startWeb } from '../api/server.ts';
import { createVault, parseVaultKey } from '../api/vault.ts';
import { openVault, rotateVault } from '../api/vaultKeys.ts';
import { freshDatabase } from './helpers/db.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 2);
t.teardown(() => db.destroy());
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const idOf = (key: string) => createVault(parseVaultKey(key)).keyId;

function emptyDataDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-vault-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The web process code with these keys and an empty data directory; stopped when the test ends. */
async function web(t: Test, env: Record<string, string>) {
  const running = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: databaseUrl, PORT: '0', SETTLE_DATA_DIR: emptyDataDir(t), ...env }), { keyCacheMs: 0 });
  t.teardown(() => running.stop());
  return running;
}

const secret = (await createTestKey(db, 'acme', 'test')).secret;
async function call(url: string, method: string, route: string, json?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + route, {
    method,
    headers: { Authorization: `Basic ${Buffer.from(`${secret}:`).toString('base64')}`, 'Content-Type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  return { status: res.status, body: await res.json() as any };
}

async function sealedValues(): Promise<string[]> {
  const found = await db.raw(`
    select data->'card'->>'sealed_number' as v from payment_methods
    union all select data->>'sender_secret_sealed' from webhooks
    union all select response_body->>'sealed' from idempotency_keys where response_body->>'sealed' is not null`);
  return found.rows.map((r: { v: string }) => r.v).filter(Boolean);
}

/** The audit events of changes (not creates) to stored objects. */
async function auditedChanges(): Promise<number> {
  return (await db.raw(`select count(*)::int as n from audit_events where data->>'action' <> 'create'`)).rows[0].n;
}

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
let methodId = '';
let webhookSecret = '';

t.test('the first process records its key; values are sealed under it', async (t) => {
  const first = await web(t, { SETTLE_VAULT_KEY: K1 });
  t.same((await db.raw('select id, state from vault_keys')).rows, [{ id: idOf(K1), state: 'active' }], 'the key id (never the key) is recorded');
  const customer = (await call(first.url, 'POST', '/customers', { name: 'Ann' })).body;
  methodId = (await call(first.url, 'POST', '/payment_methods', { ...CARD, customer_id: customer.id })).body.id;
  const hook = await call(first.url, 'POST', '/webhooks', { trigger: 'payment', url: 'https://example.com/hook' }, { 'Idempotency-Key': 'hook-1' });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  webhookSecret = hook.body.sender_secret;
  const sealed = await sealedValues();
  t.equal(sealed.length, 3, 'a card number, a webhook secret and an idempotent answer');
  for (const value of sealed) t.match(value, new RegExp(`^v2\\.${idOf(K1)}\\.`));
});

t.test('a process with another key, or with none, refuses to start with one line naming SETTLE_VAULT_KEY', async (t) => {
  await t.rejects(web(t, { SETTLE_VAULT_KEY: K2 }), { name: 'VaultKeyRefused', message: /SETTLE_VAULT_KEY .*is not the key this database's sealed data uses/ });
  await t.rejects(web(t, {}), { name: 'VaultKeyRefused', message: /SETTLE_VAULT_KEY is not set/ }, 'no key is generated for a database that has one');
  for (const [name, file] of [['web', 'api/server.ts'], ['worker', 'workers/main.ts']]) {
    const run = spawnSync(process.execPath, [file], {
      env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_VAULT_KEY: K2, SETTLE_DATA_DIR: emptyDataDir(t), PORT: '0', LOG_LEVEL: 'silent', WORKER_METRICS_PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    t.equal(run.status, 1, `${name} exits 1`);
    const lines = run.stderr.trim().split('\n');
    t.equal(lines.length, 1, `${name} says one line: ${run.stderr}`);
    t.match(lines[0], new RegExp(`^${name}: SETTLE_VAULT_KEY`));
  }
  t.same((await db.raw('select id, state from vault_keys')).rows, [{ id: idOf(K1), state: 'active' }], 'nothing recorded by a refused process');
});

t.test('a rotation re-seals every value under the new key, resumes after being cut short, and retires the old key', async (t) => {
  const both = { SETTLE_VAULT_KEY: K2, SETTLE_VAULT_PREVIOUS_KEYS: K1 };
  const during = await web(t, both);
  t.same((await db.raw('select id, state from vault_keys order by state')).rows, [{ id: idOf(K1), state: 'active' }, { id: idOf(K2), state: 'next' }], 'the new key is recorded as the next one');
  const vault = createVault(parseVaultKey(K2), [parseVaultKey(K1)]);
  const audited = await auditedChanges();
  const cut = await rotateVault(db, vault, { batchSize: 1, maxBatches: 1 });
  t.equal(cut.finished, false, 'a run cut short after one batch');
  t.equal(new Set((await sealedValues()).map((v) => v.split('.')[1])).size, 2, 'old and new keys side by side');
  const paid = await call(during.url, 'POST', '/transactions', { type: 'payment', amount: 5, payment_method_id: methodId });
  t.equal(paid.body.status, 'processed', 'meanwhile a stored card still pays (either key opens it)');
  const stillOld = await web(t, { SETTLE_VAULT_KEY: K1 });
  t.ok(stillOld.url, 'the old key is accepted until the rotation finishes');

  const done = await rotateVault(db, vault);
  t.equal(done.finished, true);
  t.same(await auditedChanges(), audited, 'a re-seal is no change of the object: no audit event');
  t.ok(done.resealed >= 2, `${done.resealed} values re-sealed by the resumed run`);
  for (const value of await sealedValues()) t.match(value, new RegExp(`^v2\\.${idOf(K2)}\\.`), 'every value under the new key');
  t.same((await db.raw(`select id, state from vault_keys order by created_at`)).rows, [{ id: idOf(K1), state: 'retired' }, { id: idOf(K2), state: 'active' }]);
  t.same(await rotateVault(db, vault), { resealed: 0, current: 0, contended: 0, finished: true }, 'a second run finds nothing to do');

  await t.rejects(web(t, { SETTLE_VAULT_KEY: K1 }), { name: 'VaultKeyRefused' }, 'the old key alone no longer starts');
  const after = await web(t, { SETTLE_VAULT_KEY: K2 });
  const again = await call(after.url, 'POST', '/transactions', { type: 'payment', amount: 6, payment_method_id: methodId });
  t.equal(again.body.status, 'processed', 'the new key alone opens the re-sealed card');
  const replay = await call(after.url, 'POST', '/webhooks', { trigger: 'payment', url: 'https://example.com/hook' }, { 'Idempotency-Key': 'hook-1' });
  t.equal(replay.body.sender_secret, webhookSecret, 'an idempotent answer sealed under the old key replays under the new one');
});

t.test('settle vault generate and settle vault rotate, as an operator runs them', async (t) => {
  const url = await freshDatabase(t);
  const dataDir = emptyDataDir(t);
  const cli = (args: string[], env: Record<string, string>) => spawnSync(process.execPath, ['bin/settle.ts', ...args], {
    env: { ...process.env, DATABASE_URL: url, SETTLE_DATA_DIR: dataDir, ...env }, encoding: 'utf8', timeout: 60_000,
  });
  const generated = cli(['vault', 'generate'], {});
  t.equal(generated.status, 0, generated.stderr);
  const fresh = generated.stdout.trim();
  t.equal(parseVaultKey(fresh).length, 32, 'a 32-byte base64 key');
  const before = await startWeb(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: url, PORT: '0', SETTLE_DATA_DIR: dataDir, SETTLE_VAULT_KEY: K1 }), { keyCacheMs: 0 });
  const own = createDb(url, 1);
  const key = (await createTestKey(own, 'acme', 'test')).secret;
  const card = await fetch(`${before.url}/payment_methods`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(CARD) });
  t.equal(card.status, 200);
  await before.stop();

  const refused = cli(['vault', 'rotate'], { SETTLE_VAULT_KEY: fresh });
  t.equal(refused.status, 2, 'without the previous key it explains what a rotation needs');
  t.match(refused.stderr, /SETTLE_VAULT_PREVIOUS_KEYS/);
  const rotated = cli(['vault', 'rotate'], { SETTLE_VAULT_KEY: fresh, SETTLE_VAULT_PREVIOUS_KEYS: K1 });
  t.equal(rotated.status, 0, rotated.stderr);
  t.match(rotated.stdout, new RegExp(`re-sealed 1 values; vault key ${idOf(fresh)} is now the active key`));
  const sealed = (await own.raw(`select data->'card'->>'sealed_number' as v from payment_methods`)).rows[0].v;
  t.match(sealed, new RegExp(`^v2\\.${idOf(fresh)}\\.`));
  await own.destroy();
});

t.test('processes that start together on a new database and one data directory all take the key one of them generates', async (t) => {
  // settle up starts web and worker at once: one may look for the key file before the other writes
  // it, and read the database after the other recorded it.
  const url = await freshDatabase(t);
  const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: url, SETTLE_DATA_DIR: emptyDataDir(t) });
  const log = pino({ level: 'silent' });
  const first = createDb(url, 1);
  const late = createDb(url, 1);
  t.teardown(() => Promise.all([first.destroy(), late.destroy()]));
  const held = await late.transaction(); // the late process's connection is busy for a moment
  const lateOpen = openVault(config, late, log);
  const firstVault = await openVault(config, first, log);
  await held.commit();
  const lateVault = await lateOpen.catch((error: Error) => error);
  t.notOk(lateVault instanceof Error, `the late one starts too (${lateVault instanceof Error ? lateVault.message : 'ok'})`);
  t.equal((lateVault as { keyId: string }).keyId, firstVault.keyId, 'with the same key');
  t.same((await first.raw('select id, state from vault_keys')).rows, [{ id: firstVault.keyId, state: 'active' }]);
});
