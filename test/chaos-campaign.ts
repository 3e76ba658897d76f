/**
 * A fault campaign (CONTRACT §26), shared by `npm run bench:chaos` and test/chaos.test.ts: Settle
 * on an embedded primary with a synchronous streaming standby, web, worker and reporting processes
 * each an OS process of its own, a steady load of card payments and refunds sent as a client
 * library sends them (Basic auth, JSON, an Idempotency-Key, retried with the same key on a 503,
 * 409, 429 or a dropped connection), two webhooks delivering to a real loopback receiver. At seeded
 * random moments a web, a worker, the reporting process or the primary database is killed with
 * SIGKILL; a killed process is restarted, a killed primary is followed by the standby's promotion
 * (`pg_promote()`, as a cluster manager does) and the dead primary's machine rejoins as the new
 * standby. After the load the campaign reads what happened from the database and the receiver.
 *
 * The checks: every acknowledged (2xx) payment and refund is stored; no 500; every event of the
 * webhooks' triggers is delivered (and every acknowledged payment's), duplicates counted; §14's
 * identity (Σ processed payments − refunds − fees = pending + available + held + funded −
 * withdrawn) holds; the reporting mirror's aggregates equal PostgreSQL's. The figures: how soon
 * after each promotion a request is answered 2xx again, a delivery of a change made after it
 * arrives, and the mirror answers a read-your-writes aggregate.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { freePort, rejoinAsStandby, startEmbeddedPair, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { createTestKey } from './helpers/keys.ts';
import { WEB_NODE_FLAGS } from '../api/process.ts';
import { Supervisor } from '../bin/supervisor.ts';
import { seededRandom } from './helpers/seeded.ts';

export type FaultKind = 'web' | 'worker' | 'reporting' | 'primary';
export const FAULT_KINDS: FaultKind[] = ['web', 'worker', 'reporting', 'primary'];

export interface CampaignOptions {
  seed: number;
  /** how long the load runs */
  seconds: number;
  /** card payments offered per second */
  rate: number;
  /** faults injected during the load, the kinds taken in turn from a seeded order of FAULT_KINDS */
  faults: number;
  /** the most requests the client has out at once; a payment due while that many are out is not sent (counted) */
  maxInFlight?: number;
  /** refunds offered per payment offered */
  refundShare?: number;
  webs?: number;
  workers?: number;
  /** more environment for the worker processes (e.g. a shorter WORKER_DEAD_AFTER in a test) */
  workerEnv?: Record<string, string>;
  /** how long a request is retried with its key before the client gives up on it (default 60 s) */
  giveUpMs?: number;
  /** how long the checks wait for deliveries and the mirror to catch up (default 120 s) */
  catchUpMs?: number;
  /** where the servers' data and the processes' logs go (default a new temp directory, removed at the end) */
  workDir?: string;
  /** from a primary's kill to the standby's promotion: the operator's tool noticing (default 1 s) */
  promoteAfterMs?: number;
  /** from the promotion to the dead primary's machine rebuilding itself as the new standby, once its leftover backends are gone (default 2 s) */
  rejoinAfterMs?: number;
  /** from a process's kill to waiting for its restart to answer, so the dead one is not taken for it (default 1 s) */
  restartCheckAfterMs?: number;
  log?: (line: string) => void;
}

export interface InjectedFault {
  kind: FaultKind;
  /** which process (`web 1`, `worker 0`, `reporting`, the primary's port) */
  target: string;
  /** ms since the load started */
  atMs: number;
}

export interface Promotion {
  /** ms since the load started */
  atMs: number;
  /** how long pg_promote() took to return */
  promoteMs: number;
  /** from pg_promote() to the first request sent after it that was answered 2xx; null: none was */
  apiAgainMs: number | null;
  /** to the first delivery of an event of a change acknowledged after the promotion */
  deliveriesAgainMs: number | null;
  /** to the first read-your-writes aggregate the reporting process answered */
  mirrorAgainMs: number | null;
  /** from the kill to the new standby streaming synchronously */
  rejoinedMs: number | null;
}

export interface CampaignResult {
  seed: number;
  seconds: number;
  rate: number;
  faults: InjectedFault[];
  promotions: Promotion[];
  offered: number;
  /** payments due while the client had maxInFlight requests out, so not sent */
  notSent: number;
  acknowledged: number;
  refundsOffered: number;
  refundsAcknowledged: number;
  /** acknowledged payments and refunds the database does not have */
  lost: string[];
  /** 5xx answers other than 503, with their bodies */
  serverErrors: Array<{ status: number; body: string }>;
  /** 503s without a Retry-After */
  unavailableWithoutRetryAfter: number;
  /** answered 4xx other than 409/429: the load sends only valid requests */
  rejected: Array<{ status: number; body: string }>;
  /** requests the client gave up on after giveUpMs of retries (not acknowledged, so not lost) */
  abandoned: number;
  retries: number;
  events: number;
  /** events of the webhooks' triggers never delivered */
  undelivered: string[];
  /** acknowledged payments whose `payment` event never reached the receiver */
  paymentsUndelivered: string[];
  /** deliveries beyond an event's first */
  duplicates: number;
  /** the most times one event was delivered */
  mostCopies: number;
  /** §14 identity failures */
  identity: string[];
  mirror: { equal: boolean; database: string; reporting: string };
  /** the 1, 5 and 15 minute load averages at the end */
  load: number[];
  /** exits of processes the campaign did not kill (the supervisor restarted them), with their last lines */
  ownExits: string[];
}

/** What a run must show: an empty list is a pass. */
export function campaignProblems(result: CampaignResult): string[] {
  const problems: string[] = [];
  if (result.lost.length) problems.push(`${result.lost.length} acknowledged changes lost: ${result.lost.slice(0, 10).join(', ')}`);
  if (result.serverErrors.length) problems.push(`${result.serverErrors.length} answers 5xx other than 503: ${JSON.stringify(result.serverErrors.slice(0, 3))}`);
  if (result.unavailableWithoutRetryAfter) problems.push(`${result.unavailableWithoutRetryAfter} 503s without Retry-After`);
  if (result.rejected.length) problems.push(`${result.rejected.length} valid requests refused: ${JSON.stringify(result.rejected.slice(0, 3))}`);
  if (result.undelivered.length) problems.push(`${result.undelivered.length} events never delivered: ${result.undelivered.slice(0, 10).join(', ')}`);
  if (result.paymentsUndelivered.length) problems.push(`${result.paymentsUndelivered.length} acknowledged payments without a delivered event: ${result.paymentsUndelivered.slice(0, 10).join(', ')}`);
  // At-least-once: a killed worker's or a lost connection's deliveries in flight may go again, each once per fault at most.
  if (result.mostCopies > 1 + result.faults.length) problems.push(`an event was delivered ${result.mostCopies} times over ${result.faults.length} faults`);
  problems.push(...result.identity);
  if (!result.mirror.equal) problems.push(`the reporting mirror ${result.mirror.reporting} differs from the database ${result.mirror.database}`);
  if (result.acknowledged === 0) problems.push('no payment was acknowledged');
  return problems;
}

/** The figures, one per line, for a person. */
export function describeCampaign(result: CampaignResult): string[] {
  const s = (ms: number | null) => (ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`);
  return [
    `seed ${result.seed}: ${result.seconds} s at ${result.rate} payments/s offered, ${result.faults.length} faults`,
    ...result.faults.map((f) => `  fault at ${(f.atMs / 1000).toFixed(1)} s: kill -9 ${f.kind} (${f.target})`),
    `payments: ${result.offered} offered (${result.notSent} not sent: the client had its most requests out), ${result.acknowledged} acknowledged (${(result.acknowledged / result.seconds).toFixed(0)}/s), ${result.abandoned} given up after retries, ${result.retries} retries`,
    `refunds: ${result.refundsOffered} offered, ${result.refundsAcknowledged} acknowledged`,
    `lost: ${result.lost.length}; 5xx other than 503: ${result.serverErrors.length}; 503 without Retry-After: ${result.unavailableWithoutRetryAfter}; valid requests refused: ${result.rejected.length}`,
    `events: ${result.events}, undelivered ${result.undelivered.length}, acknowledged payments undelivered ${result.paymentsUndelivered.length}, duplicate deliveries ${result.duplicates} (most copies of one event: ${result.mostCopies})`,
    `money identity (§14): ${result.identity.length ? result.identity.join('; ') : 'holds'}`,
    `reporting mirror: ${result.mirror.equal ? 'equal to the database' : `differs: ${result.mirror.reporting} vs ${result.mirror.database}`} ${result.mirror.database}`,
    ...result.promotions.map((p) => `  promotion at ${(p.atMs / 1000).toFixed(1)} s (pg_promote() took ${s(p.promoteMs)}): API answering again after ${s(p.apiAgainMs)}, deliveries after ${s(p.deliveriesAgainMs)}, mirror after ${s(p.mirrorAgainMs)}; new standby in sync ${s(p.rejoinedMs)} after the kill`),
    `processes that exited by themselves (restarted by the supervisor): ${result.ownExits.length}${result.ownExits.length ? `, first: ${result.ownExits[0]!.split('\n')[0]}` : ''}`,
    `load average at the end: ${result.load.map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} CPUs)`,
  ];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `read`, tried again while it throws (a connection to a host that just stopped being the primary fails once). */
async function retried<T>(read: () => Promise<T>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number, everyMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(everyMs);
  }
}

// ---- processes -----------------------------------------------------------------------------

/**
 * A project process under the supervisor `settle up` runs (bin/supervisor.ts), one supervisor
 * each so that each has its own port: a process that exits — killed by the campaign, or by itself
 * — is restarted as `settle up` restarts it.
 */
class SupervisedProcess {
  readonly name: string;
  readonly url: string | null;
  /** exits the campaign did not cause, with the process's last lines */
  ownExits: string[] = [];
  private supervisor: Supervisor;
  private pid: number | undefined;
  private tail = '';

  constructor(name: string, script: string, env: Record<string, string>, logFile: string, url: string | null = null) {
    [this.name, this.url] = [name, url];
    const log = fs.createWriteStream(logFile, { flags: 'a' });
    this.supervisor = new Supervisor([{ name, script, nodeFlags: script === 'api/server.ts' ? WEB_NODE_FLAGS : [] }], {
      root: projectRoot,
      env: { ...process.env, ...env },
      drainTimeoutMs: 10_000,
      print: (line) => {
        log.write(`${line}\n`);
        // Only the campaign sends SIGKILL; any other exit is the process's own.
        if (line.startsWith('settle') && line.includes(`${name} exited (`) && !line.includes('signal SIGKILL')) this.ownExits.push(`${line.slice(11)}\n${this.tail}`);
        else this.tail = `${this.tail}\n${line.slice(0, 500)}`.slice(-1500);
      },
      onPidsChanged: (pids) => {
        this.pid = pids[name];
      },
    });
  }

  start(): void {
    this.supervisor.start();
  }

  /** Resolves once the process answers HTTP (any status), or at once for one without a port. */
  async ready(ms = 60_000): Promise<void> {
    if (!this.url) return;
    await until(() => fetch(`${this.url}/healthz`).then(() => true, () => false), Boolean, ms, 100);
  }

  /** kill -9 of the running process; false when none runs (it is between restarts). */
  kill9(): boolean {
    if (this.pid === undefined) return false;
    try {
      process.kill(this.pid, 'SIGKILL');
      return true;
    } catch {
      return false;
    }
  }

  stop(): Promise<void> {
    return this.supervisor.stop();
  }
}

function postmasterPid(server: EmbeddedServer): number {
  return Number(fs.readFileSync(path.join(server.databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

// ---- the receiver ----------------------------------------------------------------------------

interface Receipts {
  url: string;
  /** event id → times delivered */
  copies: Map<string, number>;
  /** triggered_on.id → when its first event arrived */
  firstFor: Map<string, number>;
  close: () => Promise<void>;
}

async function startReceipts(): Promise<Receipts> {
  const copies = new Map<string, number>();
  const firstFor = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const eventId = String(req.headers['x-service-event-id'] ?? '');
      copies.set(eventId, (copies.get(eventId) ?? 0) + 1);
      try {
        const objectId = JSON.parse(Buffer.concat(chunks).toString('utf8')).triggered_on?.id;
        if (objectId && !firstFor.has(objectId)) firstFor.set(objectId, Date.now());
      } catch {
        // counted by its event id all the same
      }
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    copies,
    firstFor,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// ---- the client ------------------------------------------------------------------------------

interface Outcome {
  id: string | null;
  /** when the request that was acknowledged was sent */
  sentAt: number;
}

/** A client library's way with one create: the same Idempotency-Key until a 2xx or giveUpMs. */
class Client {
  serverErrors: Array<{ status: number; body: string }> = [];
  rejected: Array<{ status: number; body: string }> = [];
  unavailableWithoutRetryAfter = 0;
  retries = 0;
  abandoned = 0;
  private next = 0;
  /** ms of each 2xx's sending, for the figures */
  answeredAt: number[] = [];

  private webs: string[];
  private auth: string;
  private giveUpMs: number;

  constructor(webs: string[], auth: string, giveUpMs: number) {
    [this.webs, this.auth, this.giveUpMs] = [webs, auth, giveUpMs];
  }

  async create(body: unknown): Promise<Outcome> {
    const key = randomUUID();
    const deadline = Date.now() + this.giveUpMs;
    const payload = JSON.stringify(body);
    for (;;) {
      const url = this.webs[this.next++ % this.webs.length]!;
      const sentAt = Date.now();
      let waitMs = 200;
      try {
        const response = await fetch(`${url}/transactions`, {
          method: 'POST',
          headers: { Authorization: this.auth, 'Content-Type': 'application/json', 'Idempotency-Key': key },
          body: payload,
          signal: AbortSignal.timeout(20_000),
        });
        const text = await response.text();
        if (response.status >= 200 && response.status < 300) {
          this.answeredAt.push(sentAt);
          return { id: (JSON.parse(text) as { id: string }).id, sentAt };
        }
        if (response.status === 503) {
          const retryAfter = response.headers.get('Retry-After');
          if (!retryAfter) this.unavailableWithoutRetryAfter++;
          waitMs = Math.min(1000, Number(retryAfter ?? 1) * 1000);
        } else if (response.status >= 500) {
          this.serverErrors.push({ status: response.status, body: text.slice(0, 300) });
          return { id: null, sentAt };
        } else if (response.status !== 409 && response.status !== 429) {
          this.rejected.push({ status: response.status, body: text.slice(0, 300) });
          return { id: null, sentAt };
        }
      } catch {
        // a dropped or refused connection: the next web, the same key
        waitMs = 100;
      }
      if (Date.now() + waitMs > deadline) {
        this.abandoned++;
        return { id: null, sentAt };
      }
      this.retries++;
      await sleep(waitMs);
    }
  }
}

// ---- the campaign ----------------------------------------------------------------------------

const PAYMENT_CENTS = 1050;
const REFUND_CENTS = 100;
const CARD = { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } };
const TRIGGERS = ['payment', 'refund'];

/** The fault plan: `count` moments in the middle of the run, at least `gapMs` apart, kinds in a seeded turn. */
function planFaults(random: () => number, count: number, seconds: number): Array<{ kind: FaultKind; atMs: number }> {
  const start = seconds * 1000 * 0.1;
  const span = seconds * 1000 * 0.65;
  const order = [...FAULT_KINDS];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const slot = span / Math.max(1, count);
  return Array.from({ length: count }, (_, i) => ({ kind: order[i % order.length]!, atMs: Math.round(start + slot * i + random() * slot * 0.5) }));
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => {});
  const random = seededRandom(options.seed);
  const workDir = options.workDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'settle-chaos-'));
  const ownDir = !options.workDir;
  fs.mkdirSync(workDir, { recursive: true });
  // As root the servers run as the `postgres` user, which must be able to enter it.
  fs.chmodSync(workDir, 0o755);
  const cleanups: Array<() => Promise<void>> = [];
  try {
    return await campaign(options, random, workDir, log, cleanups);
  } finally {
    for (const step of cleanups.reverse()) await step().catch((error) => log(`cleanup: ${(error as Error).message}`));
    if (ownDir) fs.rmSync(workDir, { recursive: true, force: true });
  }
}

async function campaign(options: CampaignOptions, random: () => number, workDir: string, log: (line: string) => void, cleanups: Array<() => Promise<void>>): Promise<CampaignResult> {
  const dbDir = path.join(workDir, 'db');
  fs.mkdirSync(dbDir, { recursive: true });
  fs.chmodSync(dbDir, 0o755);
  const pair = await startEmbeddedPair(dbDir);
  // Which server is which changes at each failover; a killed one's stop() would wait forever.
  const servers = { primary: pair.primary, standby: pair.standby, primaryDir: dbDir, standbyDir: path.join(dbDir, 'standby') };
  const live = new Set<EmbeddedServer>([pair.primary, pair.standby]);
  cleanups.push(async () => {
    for (const server of live) await server.stop();
  });
  const bootstrap = new pg.Client(pair.primary.url('postgres'));
  await bootstrap.connect();
  await bootstrap.query('create database settle');
  await bootstrap.end();
  const databaseUrl = pair.url('settle');
  await migrate(databaseUrl);
  const db = createDb(databaseUrl, 4);
  cleanups.push(() => db.destroy());
  const key = await createTestKey(db, 'chaos', 'test');
  const auth = `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`;

  const receipts = await startReceipts();
  cleanups.push(() => receipts.close());
  const shared = { DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: workDir, SETTLE_VAULT_KEY: randomBytes(32).toString('base64'), REPORTING_SECRET: randomBytes(32).toString('base64url'), LOG_LEVEL: 'warn' };
  const reportingPort = await freePort();
  const reportingUrl = `http://127.0.0.1:${reportingPort}`;
  const reporting = new SupervisedProcess('reporting', 'reporting/main.ts', { ...shared, REPORTING_PORT: String(reportingPort) }, path.join(workDir, 'reporting.log'), reportingUrl);
  const webs: SupervisedProcess[] = [];
  for (let i = 0; i < (options.webs ?? 2); i++) {
    const port = await freePort();
    webs.push(new SupervisedProcess(`web ${i}`, 'api/server.ts', { ...shared, PORT: String(port), HOST: '127.0.0.1', REPORTING_URL: reportingUrl }, path.join(workDir, `web-${i}.log`), `http://127.0.0.1:${port}`));
  }
  const workers = Array.from({ length: options.workers ?? 2 }, (_, i) =>
    new SupervisedProcess(`worker ${i}`, 'workers/main.ts', { ...shared, WEBHOOK_ALLOW_PRIVATE: 'true', ...options.workerEnv }, path.join(workDir, `worker-${i}.log`)));
  const processes = [reporting, ...webs, ...workers];
  cleanups.push(async () => {
    await Promise.all(processes.map((p) => p.stop()));
  });
  for (const p of processes) p.start();
  await Promise.all(processes.map((p) => p.ready()));
  log(`servers: primary 127.0.0.1:${pair.primary.port}, standby 127.0.0.1:${pair.standby.port}; ${webs.length} webs, ${workers.length} workers, reporting; logs in ${workDir}`);

  const client = new Client(webs.map((w) => w.url!), auth, options.giveUpMs ?? 60_000);
  for (const trigger of TRIGGERS) {
    const response = await fetch(`${webs[0]!.url}/webhooks`, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ trigger, url: receipts.url }) });
    if (response.status !== 200) throw new Error(`webhook ${trigger}: ${response.status} ${await response.text()}`);
  }

  // ---- the load and the faults
  const acknowledged = new Map<string, number>();
  const refunds = new Map<string, number>();
  const refundable: string[] = [];
  let offered = 0;
  let refundsOffered = 0;
  let notSent = 0;
  const maxInFlight = options.maxInFlight ?? 256;
  const inFlight = new Set<Promise<void>>();
  const started = Date.now();
  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const pay = async () => {
    const outcome = await client.create({ type: 'payment', amount: PAYMENT_CENTS / 100, description: 'chaos payment', payment_method: CARD });
    if (outcome.id) {
      acknowledged.set(outcome.id, outcome.sentAt);
      refundable.push(outcome.id);
    }
  };
  const refund = async (paymentId: string) => {
    const outcome = await client.create({ type: 'refund', amount: REFUND_CENTS / 100, ledger: [{ assoc_transaction_id: paymentId }] });
    if (outcome.id) refunds.set(outcome.id, outcome.sentAt);
  };
  const refundShare = options.refundShare ?? 0.2;
  let refundDebt = 0;
  const loadDone = (async () => {
    const tickMs = 20;
    for (let tick = 0; Date.now() - started < options.seconds * 1000; tick++) {
      const due = Math.floor(((Date.now() - started) / 1000) * options.rate) - offered;
      for (let i = 0; i < due; i++) {
        offered++;
        if (inFlight.size >= maxInFlight) {
          notSent++;
          continue;
        }
        track(pay());
        refundDebt += refundShare;
      }
      while (refundDebt >= 1 && refundable.length) {
        refundDebt -= 1;
        refundsOffered++;
        // each payment is refunded once at most, so refunds never exceed what was paid
        track(refund(refundable.splice(Math.floor(random() * refundable.length), 1)[0]!));
      }
      await sleep(tickMs);
    }
  })();

  const faults: InjectedFault[] = [];
  const promotions: Promotion[] = [];
  const pending: Array<Promise<void>> = [];
  const measureAfterPromotion = async (promotion: Promotion, promotedAt: number) => {
    const mirror = (async () => {
      const answered = await until(() => aggregate(webs, auth).then((a) => a !== null), Boolean, 120_000, 250);
      if (answered) promotion.mirrorAgainMs = Date.now() - promotedAt;
    })();
    const api = until(async () => client.answeredAt.some((at) => at >= promotedAt), Boolean, 120_000, 50).then((ok) => {
      if (ok) promotion.apiAgainMs = Math.min(...client.answeredAt.filter((at) => at >= promotedAt)) - promotedAt;
    });
    const deliveries = until(async () => firstDeliveryAfter(promotedAt), (at) => at !== null, 120_000, 100).then((at) => {
      if (at !== null) promotion.deliveriesAgainMs = at - promotedAt;
    });
    await Promise.all([mirror, api, deliveries]);
  };
  const firstDeliveryAfter = (promotedAt: number): number | null => {
    let first: number | null = null;
    for (const [id, sentAt] of acknowledged) {
      if (sentAt < promotedAt) continue;
      const at = receipts.firstFor.get(id);
      if (at !== undefined && (first === null || at < first)) first = at;
    }
    return first;
  };
  const failover = async (fault: InjectedFault, killedAt: number) => {
    const dead = servers.primary;
    const deadDir = servers.primaryDir;
    process.kill(postmasterPid(dead), 'SIGKILL');
    live.delete(dead);
    fault.target = `primary 127.0.0.1:${dead.port}`;
    // The operator's tool notices and promotes a moment later.
    await sleep(options.promoteAfterMs ?? 1000);
    const promoter = new pg.Client(servers.standby.url('postgres'));
    await promoter.connect();
    // Measured from the moment promotion is asked for (pg_promote() returns once it is done).
    const promotedAt = Date.now();
    await promoter.query('select pg_promote()');
    await promoter.end();
    const promotion: Promotion = { atMs: promotedAt - started, promoteMs: Date.now() - promotedAt, apiAgainMs: null, deliveriesAgainMs: null, mirrorAgainMs: null, rejoinedMs: null };
    promotions.push(promotion);
    log(`kill -9 primary 127.0.0.1:${dead.port} at ${(fault.atMs / 1000).toFixed(1)} s; promoted 127.0.0.1:${servers.standby.port} at ${((promotedAt - started) / 1000).toFixed(1)} s (pg_promote() took ${promotion.promoteMs} ms)`);
    const measured = measureAfterPromotion(promotion, promotedAt);
    [servers.primary, servers.primaryDir] = [servers.standby, servers.standbyDir];
    // The dead machine comes back as the new standby, on its old port, once its leftover backends are gone.
    await sleep(options.rejoinAfterMs ?? 2000);
    const standby = await rejoinAsStandby(deadDir, dead.port, servers.primary);
    live.add(standby);
    [servers.standby, servers.standbyDir] = [standby, deadDir];
    if (await inSync(servers.primary)) promotion.rejoinedMs = Date.now() - killedAt;
    log(`new standby 127.0.0.1:${standby.port} ${promotion.rejoinedMs === null ? 'NOT in sync' : 'in sync'}`);
    await measured;
  };
  let primaryBusy: Promise<void> = Promise.resolve();
  for (const planned of planFaults(random, options.faults, options.seconds)) {
    await sleep(Math.max(0, started + planned.atMs - Date.now()));
    const fault: InjectedFault = { kind: planned.kind, target: '', atMs: Date.now() - started };
    if (fault.kind === 'primary') {
      // A primary is killed only with a synchronous standby to promote.
      await primaryBusy;
      fault.atMs = Date.now() - started;
      faults.push(fault);
      primaryBusy = failover(fault, Date.now());
      pending.push(primaryBusy);
      continue;
    }
    const group = fault.kind === 'web' ? webs : fault.kind === 'worker' ? workers : [reporting];
    const victim = group[Math.floor(random() * group.length)]!;
    fault.target = victim.name;
    faults.push(fault);
    // Between a crash and its restart no process runs: the kill waits for the next one.
    await until(async () => victim.kill9(), Boolean, 60_000, 100);
    log(`kill -9 ${victim.name} at ${(fault.atMs / 1000).toFixed(1)} s`);
    pending.push(sleep(options.restartCheckAfterMs ?? 1000).then(() => victim.ready()));
  }
  await loadDone;
  await Promise.all(inFlight);
  await Promise.all(pending);

  // ---- the checks
  log('load done; checking');
  const catchUpMs = options.catchUpMs ?? 120_000;
  const ackIds = [...acknowledged.keys(), ...refunds.keys()];
  const stored = new Set((await retried(() => rows<{ id: string }>(db, 'select id from transactions where id = any(?::text[])', [ackIds]))).map((r) => r.id));
  const lost = ackIds.filter((id) => !stored.has(id));
  const events = await retried(() => rows<{ id: string; object_id: string }>(db, 'select id, object_id from events where org_id = ? and trigger = any(?::text[])', [key.orgId, TRIGGERS]));
  const undeliveredNow = () => events.filter((e) => !receipts.copies.has(e.id)).map((e) => e.id);
  const undelivered = await until(async () => undeliveredNow(), (list) => list.length === 0, catchUpMs, 500);
  const paymentsUndelivered = [...acknowledged.keys()].filter((id) => !receipts.firstFor.has(id));
  const copies = [...receipts.copies.values()];
  const identity = await retried(() => identityProblems(db, webs, auth, key.orgId));
  const mirror = await until(() => retried(() => mirrorComparison(db, webs, auth, key.orgId)), (m) => m.equal, catchUpMs, 1000);
  await Promise.all(processes.map((p) => p.stop()));
  return {
    seed: options.seed,
    seconds: options.seconds,
    rate: options.rate,
    faults,
    promotions,
    offered,
    notSent,
    acknowledged: acknowledged.size,
    refundsOffered,
    refundsAcknowledged: refunds.size,
    lost,
    serverErrors: client.serverErrors,
    unavailableWithoutRetryAfter: client.unavailableWithoutRetryAfter,
    rejected: client.rejected,
    abandoned: client.abandoned,
    retries: client.retries,
    events: events.length,
    undelivered,
    paymentsUndelivered,
    duplicates: copies.reduce((sum, n) => sum + n - 1, 0),
    mostCopies: Math.max(0, ...copies),
    identity,
    mirror,
    load: os.loadavg(),
    ownExits: processes.flatMap((p) => p.ownExits),
  };
}

async function inSync(primary: EmbeddedServer): Promise<boolean> {
  const client = new pg.Client(primary.url('postgres'));
  await client.connect();
  try {
    return await until(async () => (await client.query(`select 1 from pg_stat_replication where sync_state = 'sync'`)).rowCount === 1, Boolean, 60_000, 200);
  } finally {
    await client.end();
  }
}

const AGGREGATE = '/transactions?fields=type,status,count,sum(amount)&group_by=type,status&limit=100';

/** The reporting process's aggregate through a web (read-your-writes), as `type status count cents` lines; null when unanswered. */
async function aggregate(webs: SupervisedProcess[], auth: string): Promise<string | null> {
  for (const web of webs) {
    try {
      const response = await fetch(`${web.url}${AGGREGATE}`, { headers: { Authorization: auth }, signal: AbortSignal.timeout(15_000) });
      if (response.status !== 200) continue;
      const { values } = (await response.json()) as { values: Array<Record<string, string | number>> };
      return values.map((v) => `${v.type} ${v.status} ${v.count} ${Math.round(Number(v['sum(amount)']) * 100)}`).sort().join(', ');
    } catch {
      // the next web
    }
  }
  return null;
}

async function mirrorComparison(db: Db, webs: SupervisedProcess[], auth: string, orgId: string): Promise<CampaignResult['mirror']> {
  const reporting = await aggregate(webs, auth);
  const database = (await rows<{ line: string }>(db,
    `select type || ' ' || (data->>'status') || ' ' || count(*) || ' ' || sum((data->>'amount')::bigint) as line
       from transactions where org_id = ? and environment = 'test' group by type, data->>'status'`, [orgId])).map((r) => r.line).sort().join(', ');
  return { equal: reporting === database, database, reporting: reporting ?? 'unanswered' };
}

/** §14: per processing account, Σ processed payments − refunds − fees (card pricing) = pending + available + held + funded − withdrawn. */
async function identityProblems(db: Db, webs: SupervisedProcess[], auth: string, orgId: string): Promise<string[]> {
  const left = await rows<{ account: string; cents: string }>(db,
    `select data->>'processing_id' as account,
            sum(case when type = 'payment' then (data->>'amount')::bigint - round((data->>'amount')::bigint * 0.029) - 30
                     when type = 'refund' then -(data->>'amount')::bigint else 0 end) as cents
       from transactions where org_id = ? and environment = 'test' and data->>'status' = 'processed' group by 1`, [orgId]);
  const response = await fetch(`${webs[0]!.url}/processing_accounts?fields=*,balance&limit=100`, { headers: { Authorization: auth } });
  if (response.status !== 200) return [`balances: ${response.status} ${await response.text()}`];
  const { values } = (await response.json()) as { values: Array<{ id: string; balance: Record<string, number> }> };
  const problems: string[] = [];
  const cents = (n: number) => Math.round(n * 100);
  for (const { account, cents: sum } of left) {
    const b = values.find((v) => v.id === account)?.balance;
    if (!b) {
      problems.push(`${account}: no balance`);
      continue;
    }
    const right = cents(b.pending) + cents(b.available) + cents(b.held) + cents(b.funded) - cents(b.withdrawn);
    if (right !== Number(sum)) problems.push(`${account}: transactions say ${Number(sum) / 100}, balance says ${right / 100} ${JSON.stringify(b)}`);
  }
  return problems;
}
