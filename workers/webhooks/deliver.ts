/**
 * `deliver_webhook`: the dispatcher (dispatchLoop.ts) turns an event into one delivery per matching
 * webhook; a delivery is attempted, logged, and on failure retried on the webhook's schedule (jitter,
 * Retry-After, 410 disables). At least once: an attempt is logged `in_flight` before its request
 * goes out, and its answer completes the log in the statement that enqueues the next job; a crash
 * between the two leaves the attempt logged with its outcome unknown, and the retry is the next
 * attempt. Only the answer's commit waits for the WAL flush (unflushed.ts says why the rest need not). A receiver dedups on the event id. Tenants share the worker fairly: an org whose
 * receivers are slow and that has no room in this process (tenantSlots.ts) has the delivery
 * deferred, which is not an attempt; one whose receivers answer waits for its slot.
 *
 * A delivery's job carries its event (never changes); an attempt, once its org has room, opens
 * itself (reads what can change, the delivery's state and its webhook, takes the next number and
 * logs it in flight) and records its answer, and concurrent deliveries share those writes: one
 * statement each per batch (batcher.ts), not two per delivery. A job of an org whose receivers
 * answer takes more of the org's due delivery jobs along (Companions below), so a backlog fills
 * those batches instead of waiting one delivery per job slot.
 */
import type { LookupFunction } from 'node:net';
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { RATE_SLOT_PRIORITY, type DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { WEBHOOK_LOG_STATUSES } from '../../api/families/webhook_logs/family.ts';
import { formatTimestamp } from '../../api/schema/values.ts';
import { deferrals, deliveries, deliveryDuration } from '../../api/metrics.ts';
import { signatureHeaders } from '../../api/webhooks/signature.ts';
import { Batcher } from './batcher.ts';
import { completeCompanionJobs, failCompanionJobs, takeCompanionJobs, type CompanionJob } from './companionJobs.ts';
import type { ClaimedJob, DispatchClaim } from './dispatch.ts';
import { deferDelivery, dropWaitingDeliveryJob, wakeDeferredDelivery } from './deferrals.ts';
import { openAttempts, recordAttempts, type AttemptRecord, type OpenedAttempt } from './deliveries.ts';
import type { DnsLookups } from './dnsLookup.ts';
import type { OAuthParams, OAuthTokens } from './oauth.ts';
import { answerText, describeFailure, type Outbound } from './outbound.ts';
import type { RateLimiter } from './rateLimiter.ts';
import { COMPANIONS_PER_JOB, type TenantSlots } from './tenantSlots.ts';
import { DISABLED_GONE, disableWebhook, noteExhausted } from './webhookHealth.ts';

export interface DeliveryDeps {
  db: Db;
  http: Outbound;
  oauth: OAuthTokens;
  vault: DomainServices['vault'];
  /** the services a change of the webhook through its family needs (health: a streak, a disable) */
  domain: DomainServices;
  schedule: number[];
  disableAfterMs: number;
  /** per-webhook rate limits, shared by every worker process */
  rates: RateLimiter;
  /** per-org admission of attempts in this process (WEBHOOK_TENANT_CONCURRENCY) */
  slots: TenantSlots;
  /** host name lookups that fail fast, accounted per org (WEBHOOK_DNS_TIMEOUT) */
  lookups: DnsLookups;
  /** WEBHOOK_TIMEOUT: the longest an attempt holds its slot, the unit of a deferral's wait (up to DEFER_MAX_MS) */
  timeoutMs: number;
  now?: () => number;
  random?: () => number;
  /** opens a sealed secret (default: the vault, remembered per sealed value) */
  unseal?: (sealed: string) => string;
}

/** A receiver's answer is read (and logged) this far; the connection is closed past it. */
const RESPONSE_KEPT = 16 * 1024;
/**
 * A deferred delivery comes back by itself within this, whoever deferred it; an ended attempt of
 * its org here calls it sooner. Short, because that call is one process's to make: a process that
 * dies (kill -9, a lost machine) makes none, and its deferred deliveries must not wait on it.
 */
const DEFER_MAX_MS = 3000;
/** Deferred jobs tried in turn when a slot frees (some may have run elsewhere already). */
const WAKE_TRIES = 4;

/**
 * The body of an attempt, built once: the signature covers these exact bytes. `url` is where this
 * attempt goes (the webhook's address when it is made), `triggered_at` the event's time.
 */
export function deliveryBody(delivery: DeliveryJob, url: string): string {
  const at = formatTimestamp(delivery.event_created_at);
  return JSON.stringify({
    object: 'webhook_trigger',
    event_id: delivery.event_id,
    webhook_id: delivery.webhook_id,
    trigger: delivery.trigger,
    triggered_on: { id: delivery.object_id, object: delivery.object_type, value: delivery.value },
    triggered_at: at,
    url,
    created_at: at,
    sequence: delivery.sequence,
    // Only a test event says so: a real delivery's bytes stay as they were.
    ...(delivery.test ? { test: true } : {}),
  });
}

/** The wait before attempt `attempt + 1`: the schedule's entry ±20 %, or the receiver's Retry-After. */
export function nextDelayMs(schedule: number[], attempt: number, retryAfter: string | undefined, random: () => number): number {
  const asked = retryAfter ? retryAfterMs(retryAfter) : null;
  if (asked !== null) return asked;
  const base = schedule[Math.min(attempt - 1, schedule.length - 1)];
  return Math.round(base * (0.8 + 0.4 * random()));
}

function retryAfterMs(value: string): number | null {
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

interface AttemptOutcome {
  httpStatus: number | null;
  oauthStatus: number | null;
  response: string | null;
  error: string | null;
  retryAfter?: string;
}

/** The status decides; of the body only the logged part is read. */
async function post(deps: DeliveryDeps, url: string, body: string, headers: Record<string, string>, dnsLookup: LookupFunction): Promise<AttemptOutcome> {
  try {
    const response = await deps.http.request(url, { method: 'POST', body, headers, dnsLookup }, RESPONSE_KEPT);
    const retryAfter = [429, 503].includes(response.statusCode) ? (response.headers['retry-after'] as string | undefined) : undefined;
    const redirected = response.statusCode >= 300 && response.statusCode < 400;
    return { httpStatus: response.statusCode, oauthStatus: null, response: answerText(response.body), error: redirected ? 'redirects are not followed' : null, retryAfter };
  } catch (error) {
    return { httpStatus: null, oauthStatus: null, response: null, error: describeFailure(error) };
  }
}

/**
 * The secrets a delivery is signed with: the webhook's own, then the one a rotation replaced while
 * its overlap lasts (CONTRACT §19), so a receiver still holding the old secret keeps verifying.
 */
function signingSecrets(deps: DeliveryDeps, webhook: Record<string, unknown>, nowMs: number): string[] {
  const secrets = [deps.unseal!(String(webhook.sender_secret_sealed))];
  const previous = webhook.previous_secret_sealed;
  const until = Date.parse(String(webhook.previous_secret_expires_at ?? ''));
  if (typeof previous === 'string' && until > nowMs) secrets.push(deps.unseal!(previous));
  return secrets;
}

/** One attempt, with OAuth when configured; a 401 drops the token and tries once more at once. */
async function attempt(deps: DeliveryDeps, job: DeliveryJob, webhook: Record<string, unknown>, body: string): Promise<AttemptOutcome> {
  const nowMs = deps.now?.() ?? Date.now();
  const timestamp = Math.floor(nowMs / 1000);
  const secrets = signingSecrets(deps, webhook, nowMs);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-service-event-id': job.event_id,
    'x-service-sequence': String(job.sequence),
    ...signatureHeaders(secrets, job.event_id, timestamp, body),
  };
  const lookup = deps.lookups.forTenant(job.org_id);
  const oauth = oauthParams(deps, webhook);
  if (!oauth) return post(deps, String(webhook.url), body, headers, lookup);
  for (let round = 0; round < 2; round++) {
    const token = await deps.oauth.token(job.webhook_id, oauth, lookup);
    if (!token.ok) return { httpStatus: null, oauthStatus: token.status, response: null, error: token.error };
    const outcome = await post(deps, String(webhook.url), body, { ...headers, authorization: `Bearer ${token.token}` }, lookup);
    outcome.oauthStatus = token.status;
    if (outcome.httpStatus !== 401 || round === 1) return outcome;
    deps.oauth.drop(job.webhook_id, oauth);
  }
  throw new Error('unreachable');
}

/** Sealed secrets opened once per process: the same few webhooks' secrets are opened on every delivery otherwise. */
const UNSEALED_KEPT = 10_000;

function unsealer(vault: DomainServices['vault']): (sealed: string) => string {
  const opened = new Map<string, string>();
  return (sealed) => {
    let plain = opened.get(sealed);
    if (plain === undefined) {
      plain = vault.decrypt(sealed);
      if (opened.size >= UNSEALED_KEPT) opened.clear();
      opened.set(sealed, plain);
    }
    return plain;
  };
}

function oauthParams(deps: DeliveryDeps, webhook: Record<string, unknown>): OAuthParams | null {
  const params = webhook.oauth_params as (Record<string, unknown> | null | undefined);
  if (!params || typeof params.auth_url !== 'string' || typeof params.client_secret_sealed !== 'string') return null;
  return {
    auth_url: params.auth_url,
    client_id: String(params.client_id),
    client_secret: deps.unseal!(params.client_secret_sealed),
    grant_type: String(params.grant_type),
    resource: (params.resource as string | null) ?? null,
    scope: (params.scope as string | null) ?? null,
  };
}

/**
 * No room for the org in this process: the delivery's job comes back when an attempt of the org
 * here ends (wakeDeferred), or by itself when its turn would be due if every attempt ahead of it
 * took the whole timeout, and within DEFER_MAX_MS at the latest (spread over its second half, so
 * deferred deliveries do not all come back at once). Coming back to no room is deferring again.
 */
async function deferUntilRoom(deps: DeliveryDeps, job: DeliveryJob): Promise<void> {
  const ahead = deps.slots.deferredCount(job.org_id);
  const turnMs = deps.timeoutMs * (1 + Math.floor(ahead / Math.max(1, deps.slots.limit)));
  const waitMs = Math.round(Math.min(DEFER_MAX_MS, turnMs) * (0.5 + 0.5 * (deps.random ?? Math.random)()));
  deferrals.inc({ reason: 'no_room' });
  const jobId = await deferDelivery(deps.db, job, new Date((deps.now?.() ?? Date.now()) + waitMs));
  if (!jobId) return;
  deps.slots.deferredJob(job.org_id, jobId);
  // The attempts that filled the org's slots may have ended while the job was being deferred,
  // with none of them seeing it to call it back.
  if (deps.slots.hasRoom(job.org_id)) await wakeDeferred(deps, job.org_id);
}

/**
 * An attempt of `org` ended and left its slot free: the oldest delivery deferred for want of one
 * runs now, ahead of the org's later deliveries unless its receivers are slow (then behind every
 * org's first attempts, as deferred). Woken only into a free slot: one woken while the org's slots
 * are taken would be deferred again, at the front of the queue, as often as it was woken.
 */
async function wakeDeferred(deps: DeliveryDeps, org: string): Promise<void> {
  for (let tries = 0; tries < WAKE_TRIES; tries++) {
    const jobId = deps.slots.nextDeferred(org);
    if (!jobId) return;
    try {
      if (await wakeDeferredDelivery(deps.db, jobId, !deps.slots.slow(org))) return;
    } catch {
      return; // its own run_at brings it back
    }
  }
}

/**
 * An attempt still unanswered after this gives its job back: a watch job for the delivery stands
 * in (due when the attempt's timeout and WATCH_GRACE_MS have passed) and the running job completes,
 * so receivers that hang hold sockets, not the worker's concurrency, however many orgs they are. The
 * answer, when it comes, is recorded as before, and a retry it schedules replaces the watch job; if
 * this process dies first, the watch job makes the next attempt, the hanging one logged `unknown`.
 */
const DETACH_AFTER_MS = 1000;
/** Past the attempt's timeout, when the watch job of a detached attempt comes due. */
const WATCH_GRACE_MS = 5000;
/** Attempts running detached at once in one process; beyond this, an attempt keeps its job. */
const DETACHED_MAX = 2000;

/** How often a delivery in line asks again for a slot of its org. */
const IN_LINE_RETRY_MS = 25;

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/**
 * A server at its connection limit refuses a new connection (53300) before any statement runs on
 * it. A batch of answers is asked again past that, a few times: left unrecorded, each of its
 * deliveries is attempted again (a duplicate the receiver sees), for a refusal that lasts moments.
 */
const REFUSED_TRIES = 10;
const REFUSED_RETRY_MS = 200;

export async function refusedAgain<T>(statement: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await statement();
    } catch (error) {
      if ((error as { code?: unknown }).code !== '53300' || tries >= REFUSED_TRIES) throw error;
      await pause(REFUSED_RETRY_MS);
    }
  }
}

/** Statements of the delivery path gather this many deliveries at most. */
const BATCH_MAX = 200;

/** The job's payload (JOB_PAYLOAD): every delivery job carries its event. */
function deliveryJob(payload: unknown): DeliveryJob {
  const job = payload as Partial<DeliveryJob>;
  if (typeof job.delivery_id !== 'string' || typeof job.event_id !== 'string' || typeof job.webhook_id !== 'string' || typeof job.org_id !== 'string'
    || typeof job.sequence !== 'number') {
    throw new Error('deliver_webhook needs a delivery and its event (delivery_id, event_id, webhook_id, org_id, sequence)');
  }
  return job as DeliveryJob;
}

/** An attempt whose job completed before its answer came: `recorded` settles once the answer is recorded or given up on. */
interface DetachedAttempt {
  recorded: Promise<void>;
}

interface SentAttempt {
  opened: OpenedAttempt;
  outcome: AttemptOutcome;
  durationMs: number;
}

/** The answer to an opened attempt as the delivery's next state, the log's answer and the metrics label. */
function settleAttempt(deps: DeliveryDeps, job: DeliveryJob, opened: OpenedAttempt, outcome: AttemptOutcome, durationMs: number) {
  const number = opened.attempt;
  const delivered = outcome.httpStatus !== null && outcome.httpStatus >= 200 && outcome.httpStatus < 300;
  const gone = outcome.httpStatus === 410;
  const retries = Number(opened.webhook.retries ?? 8);
  const retry = !delivered && !gone && number <= retries;
  const nextAttemptAt = retry ? new Date((deps.now?.() ?? Date.now()) + nextDelayMs(deps.schedule, number, outcome.retryAfter, deps.random ?? Math.random)) : null;
  const record: AttemptRecord = {
    job,
    opened,
    state: delivered ? 'delivered' : retry ? 'pending' : 'failed',
    answer: {
      status: delivered ? WEBHOOK_LOG_STATUSES.delivered : WEBHOOK_LOG_STATUSES.failed,
      httpStatus: outcome.httpStatus,
      oauthStatus: outcome.oauthStatus,
      durationMs,
      response: outcome.response,
      error: outcome.error,
      nextAttemptAt,
    },
  };
  return { record, delivered, gone, retry, label: delivered ? 'delivered' : gone ? 'gone' : retry ? 'retry' : 'failed' };
}

/**
 * The deliveries this process's dispatch passes claim (dispatch.ts, DispatchClaim): each org whose
 * receivers answer may have as many claimed as its companions' room left here, and they run as its
 * companions do (rate and tenant slot, opening, answer, record; their jobs completed in batches,
 * given back when a delivery throws). An org not answering has none claimed: its deliveries queue.
 */
export interface DispatchClaims {
  /** what the next pass may claim for the process, locked by `lockedBy` */
  claim(lockedBy: string): DispatchClaim;
  /**
   * Attempts claimed deliveries, all inside `around` (their jobs' setting: audit actor, tenant
   * gate; one call, so one tenant's); resolves when each job is completed or given back. They
   * count against their org's room from the call on, so the next pass claims only what is left.
   */
  run(jobs: ClaimedJob[], lockedBy: string, around?: (work: () => Promise<void>) => Promise<void>): Promise<void>;
  /** Resolves when a delivery run here as a companion or a claim ends (its room is free again), or after `withinMs`. */
  roomFreed(withinMs: number): Promise<void>;
}

/** The `deliver_webhook` task, and the attempts of the deliveries dispatch claims for this process (sharing its slots and batches). */
export function deliveryWorker(deps: DeliveryDeps): { task: Task; claims: DispatchClaims } {
  deps.unseal ??= unsealer(deps.vault);
  // Concurrent deliveries share their writes: one statement each per batch.
  const opens = new Batcher<DeliveryJob, OpenedAttempt | undefined>(async (jobs) => {
    const opened = new Map((await openAttempts(deps.db, jobs)).map((row) => [row.delivery_id, row]));
    return jobs.map((job) => opened.get(job.delivery_id));
  }, { maxItems: BATCH_MAX, maxInFlight: 2 });
  const records = new Batcher<AttemptRecord, void>(async (batch) => {
    await refusedAgain(() => recordAttempts(deps.db, batch));
    return batch.map(() => undefined);
  }, { maxItems: BATCH_MAX, maxInFlight: 2 });
  const detached = new Set<Promise<void>>();
  /** Each delivery's latest run in this process, until its attempt's answer is recorded (or given up on). */
  const unsettled = new Map<string, Promise<void>>();
  /**
   * One delivery's run, after any earlier run of it here has settled. A job is run again while its
   * first run still goes on in this process when the database went away mid-job: the job runner is
   * replaced and the old one's jobs released (workers/main.ts), but its attempts are still out and
   * their answers still to be recorded. A run that did not wait would open the next attempt while
   * the answer is on its way and send it again, and the late answer would then log the earlier
   * attempt as answered: a repeat no log accounts for. Waiting costs no statement, and the opening
   * that follows finds an answered delivery no longer pending and sends nothing; one whose answer
   * could not be recorded (the database still away) is attempted anew, as the next attempt. The
   * wait ends when the earlier attempt is overdue (its timeout and WATCH_GRACE_MS): a recording
   * hung on a connection that died silently must not hold the job's slot, nor the delivery, for
   * as long as the operating system takes to notice.
   */
  const deliverOne = async (given: DeliveryJob, jobId: string, inLine: boolean, companion: boolean): Promise<void> => {
    const id = given.delivery_id;
    const earlier = unsettled.get(id);
    let settle!: () => void;
    const mine = new Promise<void>((resolve) => (settle = resolve));
    unsettled.set(id, mine);
    const settled = () => {
      settle();
      if (unsettled.get(id) === mine) unsettled.delete(id);
    };
    let detachedAttempt: DetachedAttempt | undefined;
    try {
      if (earlier) {
        deferrals.inc({ reason: 'earlier_attempt' });
        await settledOrOverdue(earlier, deps.timeoutMs + WATCH_GRACE_MS);
      }
      detachedAttempt = await attemptOne(given, jobId, inLine, companion);
    } finally {
      if (detachedAttempt) void detachedAttempt.recorded.finally(settled);
      else settled();
    }
  };
  /**
   * One delivery's attempt, from its rate and tenant slots to its recorded answer. `jobId`: the job
   * carrying it; `inLine`: it holds a resend's line; `companion`: taken along by another job.
   * Resolves when the job may complete: with the attempt, when it was detached from its job and
   * its answer is still to be recorded.
   */
  const attemptOne = async (given: DeliveryJob, jobId: string, inLine: boolean, companion: boolean): Promise<DetachedAttempt | undefined> => {
    let job = given;
    // Over its webhook's rate: the delivery comes back for its slot, no attempt made.
    let later = await deps.rates.admit(job);
    while (later && inLine) {
      job = { ...job, rate_slot_ms: later.slotMs };
      await pause(later.runAt.getTime() - Date.now());
      later = await deps.rates.admit(job);
    }
    if (later) {
      deferrals.inc({ reason: 'rate_limit' });
      await deferDelivery(deps.db, { ...job, rate_slot_ms: later.slotMs }, later.runAt, RATE_SLOT_PRIORITY);
      return undefined;
    }
    let slot = (companion ? deps.slots.accompany(job.org_id, jobId) : null) ?? await deps.slots.acquire(job.org_id, jobId);
    while (!slot && inLine) {
      await pause(IN_LINE_RETRY_MS);
      slot = await deps.slots.acquire(job.org_id);
    }
    if (!slot) return void (await deferUntilRoom(deps, job));
    let opened: OpenedAttempt | undefined;
    try {
      // Logged before it goes out: a crash from here on leaves an attempt whose outcome is unknown, never none.
      opened = await opens.add(job);
    } finally {
      if (!opened && slot.release()) await wakeDeferred(deps, job.org_id);
    }
    if (!opened) return undefined;
    slot.sending();
    const started = performance.now();
    const sending = attempt(deps, job, opened.webhook, deliveryBody(job, String(opened.webhook.url))).then(
      (outcome) => ({ opened: opened!, outcome, durationMs: Math.round(performance.now() - started) }),
      (error: unknown) => { slot.release(); throw error; });
    let watched = false;
    const finish = async (sent: SentAttempt) => {
      const freed = slot.release();
      const settled = settleAttempt(deps, job, sent.opened, sent.outcome, sent.durationMs);
      // The job completes only once the answer is recorded: a crash before that repeats the attempt, as the next one.
      await records.add(settled.record);
      deliveries.inc({ outcome: settled.label });
      deliveryDuration.observe({ outcome: settled.label }, settled.record.answer.durationMs / 1000);
      // A retry took the watch job's key over; a last answer leaves the watch job nothing to do.
      if (watched && !settled.retry) await dropWaitingDeliveryJob(deps.db, job.delivery_id);
      if (freed) await wakeDeferred(deps, job.org_id);
      if (settled.gone) await disableWebhook(deps.db, deps.domain, job.webhook_id, DISABLED_GONE, new Date(deps.now?.() ?? Date.now()));
      else if (!settled.delivered && !settled.retry) await noteExhausted(deps.db, deps.domain, job.webhook_id, deps.disableAfterMs, new Date(deps.now?.() ?? Date.now()));
    };
    if (inLine || detached.size >= DETACHED_MAX) return void (await finish(await sending));
    let timer: NodeJS.Timeout | undefined;
    const early = await Promise.race([sending, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), DETACH_AFTER_MS)))]);
    clearTimeout(timer);
    if (early) return void (await finish(early));
    // Hanging: the watch job takes the delivery's key, this job completes, the answer is awaited here.
    try {
      await deferDelivery(deps.db, job, new Date((deps.now?.() ?? Date.now()) + deps.timeoutMs + WATCH_GRACE_MS));
    } catch {
      // No watch job (the database is away: a failover): the job keeps the attempt and ends with
      // its answer, which frees the org's slot. Left to nobody, the slot would stay taken, and an
      // org with all its slots taken so would have every later delivery deferred until a restart.
      return void (await finish(await sending));
    }
    watched = true;
    // Not recorded (the database is away): counted, and the watch job makes the next attempt.
    const running = sending.then(finish).catch(() => void deliveries.inc({ outcome: 'unrecorded' })).finally(() => detached.delete(running));
    detached.add(running);
    return { recorded: running };
  };
  const companions = new Companions(deps);
  const asCompanion = (companion: { id: string; job: DeliveryJob }) => deliverOne(companion.job, companion.id, false, true);
  const task: Task = async (payload, helpers) => {
    const job = deliveryJob(payload);
    // A delivery in line (a resend's first attempt) waits its turn here, holding the line.
    const inLine = helpers.job.job_queue_id != null;
    const own = deliverOne(job, helpers.job.id, inLine, false);
    const lockedBy = helpers.job.locked_by;
    if (inLine || !lockedBy) return own;
    // Companions run beside this job's own delivery; the job completes once all of them are done.
    await Promise.all([own, companions.run(job, lockedBy, asCompanion)]);
  };
  return {
    task,
    claims: {
      claim: (lockedBy) => ({ lockedBy, rooms: companions.rooms() }),
      run: (jobs, lockedBy, around) => companions.runTaken(jobs, lockedBy, asCompanion, false, around),
      roomFreed: (withinMs) => companions.roomFreed(withinMs),
    },
  };
}

/** After a look that found no companion for a tenant, its jobs run alone this long: no statement a job for nothing. */
const COMPANIONS_QUIET_MS = 250;

/**
 * Companion jobs: a job of an org whose receivers answer takes up to COMPANIONS_PER_JOB more of its
 * due delivery jobs along (companionJobs.ts), so a backlog drains many deliveries per job and per
 * round trip instead of one per graphile-worker job slot. Each goes through the same attempt as
 * its own job would (rate, tenant slot, opening, answer, record), and is completed or failed in
 * batches once done; its lock is the worker's, so a process that dies leaves it to be released.
 * Only while the org's receivers answer: a slow org's deliveries keep one job slot each, within
 * its limits.
 */
class Companions {
  private readonly deps: DeliveryDeps;
  private readonly quietUntil = new Map<string, number>();
  /** companions of each org running here */
  private readonly running = new Map<string, number>();
  private readonly completions: Batcher<{ id: string; lockedBy: string }, void>;
  private readonly failures: Batcher<{ id: string; lockedBy: string; message: string }, void>;
  /** callers of roomFreed waiting for a delivery to end */
  private freed: Array<() => void> = [];

  constructor(deps: DeliveryDeps) {
    this.deps = deps;
    this.completions = new Batcher<{ id: string; lockedBy: string }, void>(async (done) => {
      for (const [lockedBy, ids] of byWorker(done)) await completeCompanionJobs(deps.db, ids.map((d) => d.id), lockedBy);
      return done.map(() => undefined);
    }, { maxItems: BATCH_MAX, maxInFlight: 2 });
    this.failures = new Batcher<{ id: string; lockedBy: string; message: string }, void>(async (failed) => {
      for (const [lockedBy, jobs] of byWorker(failed)) await failCompanionJobs(deps.db, jobs, lockedBy);
      return failed.map(() => undefined);
    }, { maxItems: BATCH_MAX, maxInFlight: 1 });
  }

  /**
   * Takes due jobs of `leader`'s tenant along, if its org's receivers answer, and runs `deliver` on
   * each; resolves when all are completed or failed.
   */
  async run(leader: DeliveryJob, lockedBy: string, deliver: (companion: { id: string; job: DeliveryJob }) => Promise<void>): Promise<void> {
    const org = leader.org_id;
    const tenant = `${org} ${leader.environment}`;
    const nowMs = performance.now();
    // Companions of the org out here at most: what its receivers absorb (tenantSlots.ts, companionRoom).
    const room = Math.min(COMPANIONS_PER_JOB, this.deps.slots.companionRoom(org) - (this.running.get(org) ?? 0));
    if (room <= 0 || !this.deps.slots.answering(org) || (this.quietUntil.get(tenant) ?? 0) > nowMs) return;
    this.began(org, room);
    let taken: CompanionJob[] = [];
    try {
      taken = await takeCompanionJobs(this.deps.db, { org, environment: leader.environment }, lockedBy, room);
    } finally {
      this.ended(org, room - taken.length);
    }
    if (taken.length === 0) {
      this.quietUntil.set(tenant, nowMs + COMPANIONS_QUIET_MS);
      return;
    }
    this.quietUntil.delete(tenant);
    await this.runTaken(taken, lockedBy, deliver, true);
  }

  /**
   * Each org whose receivers answer, with its room for companions left here (0 when it is full):
   * what a dispatch pass may claim for this process (dispatch.ts). An org listed without room has
   * its new deliveries counted as the pass's overflow, which paces the next pass (dispatchLoop.ts).
   */
  rooms(): Array<{ org: string; room: number }> {
    return this.deps.slots.answeringOrgs()
      .map((org) => ({ org, room: Math.max(0, this.deps.slots.companionRoom(org) - (this.running.get(org) ?? 0)) }));
  }

  /**
   * Runs `deliver` on jobs locked for this process (`counted`: already counted as running, as
   * `run` counts its take before it; otherwise counted before this returns), all
   * inside `around`, completing each once done. Jobs whose `around` fails before their deliveries
   * start are given back: left locked by a live process, they would wait graphile-worker's hours.
   */
  async runTaken(jobs: CompanionJob[], lockedBy: string, deliver: (companion: { id: string; job: DeliveryJob }) => Promise<void>, counted = false,
    around: (work: () => Promise<void>) => Promise<void> = (work) => work()): Promise<void> {
    const orgOf = (payload: unknown) => (payload as Partial<DeliveryJob> | null)?.org_id ?? '';
    if (!counted) for (const { payload } of jobs) this.began(orgOf(payload), 1);
    let started = false;
    // Every delivery runs to its end before this settles, whichever fails: the caller's setting
    // (the tenant's gate) holds until the last is done, and a stop waits for them all.
    const each = async () => {
      started = true;
      await settledAll(jobs.map(async ({ id, payload }) => {
        try {
          await this.deliverAndComplete(id, payload, lockedBy, deliver);
        } finally {
          this.ended(orgOf(payload), 1);
        }
      }));
    };
    try {
      await around(each);
    } catch (error) {
      if (started) throw error;
      for (const { payload } of jobs) this.ended(orgOf(payload), 1);
      const message = error instanceof Error ? error.message : String(error);
      await Promise.all(jobs.map(({ id }) => this.giveBack(id, lockedBy, message)));
    }
  }

  private began(org: string, count: number): void {
    this.running.set(org, (this.running.get(org) ?? 0) + count);
  }

  private ended(org: string, count: number): void {
    const left = (this.running.get(org) ?? 0) - count;
    if (left > 0) this.running.set(org, left);
    else this.running.delete(org);
    if (count > 0 && this.freed.length > 0) for (const wake of this.freed.splice(0)) wake();
  }

  /** Resolves at the next end of a delivery counted here, or after `withinMs`. */
  roomFreed(withinMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.freed = this.freed.filter((waiting) => waiting !== done);
        resolve();
      }, Math.max(0, withinMs));
      this.freed.push(done);
    });
  }

  /** A companion's delivery, then its job completed; failed (to run again later) when the delivery throws. */
  private async deliverAndComplete(id: string, payload: unknown, lockedBy: string, deliver: (companion: { id: string; job: DeliveryJob }) => Promise<void>): Promise<void> {
    try {
      await deliver({ id, job: deliveryJob(payload) });
    } catch (error) {
      return this.giveBack(id, lockedBy, error instanceof Error ? error.message : String(error));
    }
    // Not completed (a failed statement): unlocked instead, so it is not left held by a live worker; its delivery's state skips it.
    await this.completions.add({ id, lockedBy }).catch((error: unknown) => this.giveBack(id, lockedBy, String(error)));
  }

  /**
   * Unlocks a companion's job to run again, asking again while the database is away (a failover):
   * a job left locked under the id of a worker that lives on is not released as a dead worker's
   * are, and would wait graphile-worker's four hours.
   */
  private async giveBack(id: string, lockedBy: string, message: string): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.failures.add({ id, lockedBy, message });
      } catch (error) {
        if (tries >= GIVE_BACK_TRIES) throw error;
        await pause(GIVE_BACK_RETRY_MS);
      }
    }
  }
}

/** How often, and how many times at most, a companion's job is offered back while the database is away: a failover's length and more. */
const GIVE_BACK_RETRY_MS = 1000;
const GIVE_BACK_TRIES = 60;

function byWorker<T extends { lockedBy: string }>(items: T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(item.lockedBy, [...(groups.get(item.lockedBy) ?? []), item]);
  return groups;
}

/** Resolves when every one of `work` has settled; rejects then with the first failure, if any. */
export async function settledAll(work: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Resolves when `earlier` settles or `overdueMs` have passed, whichever comes first. */
function settledOrOverdue(earlier: Promise<void>, overdueMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<void>((resolve) => (timer = setTimeout(resolve, overdueMs)));
  return Promise.race([earlier, overdue]).finally(() => clearTimeout(timer));
}
