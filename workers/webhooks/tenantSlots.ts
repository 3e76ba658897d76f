/**
 * Per-tenant admission of outbound attempts in one worker process. At most `limit` attempts of
 * one org that hold a job slot are in flight, so an org whose receivers hang holds that many of the
 * worker's job slots instead of all of them (deliveries taken along by a running job, accompany,
 * hold none and do not count against it: counted, an org's companions in flight left its own jobs
 * no slot but a deferral). An attempt over the limit waits for a slot as long as the org's
 * receivers answer (no request of it out longer than RESPONSIVE_MS): its slot frees within
 * milliseconds, and a deferral would cost it seconds. Only an org whose receivers are slow has
 * its deliveries deferred (a new job later, see deferDelivery), and a waiting attempt is turned
 * away as soon as its org turns slow. The caller records a deferred job here, and each attempt
 * that ends names one such job to bring forward: a deferred delivery runs when its org has room,
 * not when a timer guesses it might. A receiver is judged from its request going out: the time an
 * attempt spends being opened in the database (a commit on a loaded server) says nothing of it. The slots and that list live and
 * die with the process: a dead worker holds no slot another waits for, and the deliveries it
 * deferred come back by their own run_at, seconds away (deliver.ts, DEFER_MAX_MS).
 *
 * Many orgs with hanging receivers would still fill every job slot between them, two each: so an
 * org whose receivers are slow (an attempt in flight past RESPONSIVE_MS, or one that took longer
 * than SLOW_ATTEMPT_MS within SLOW_MEMORY_MS) starts a new attempt only while fewer than
 * `slowBudget` attempts of any org are in flight here. The rest of the worker's concurrency stays
 * free for orgs whose receivers answer, however many orgs hang (deferred deliveries also queue
 * behind fresh ones: deliveryJobs' priority).
 *
 * The limit keeps room for other orgs; an org alone in the process (no other org's attempts in
 * flight or waiting here) whose receivers answer (one answered within RESPONSIVE_MS in
 * the last ANSWERED_MEMORY_MS, none in flight longer) goes past it, up to `slowBudget`: one
 * org's backlog otherwise drained eight attempts at a time, each holding its slot through the
 * durable commit of its opening, in batches of four, at 1.6 times the CPU per delivery. Another org
 * arriving finds room at once (its own limit), and from then on the first is held to its limit
 * again; if its receivers turn slow it is held too, and those in flight give their job slots back
 * within a second (deliver.ts, DETACH_AFTER_MS).
 *
 * An org's requests out at once (its companions and its jobs', from this process and from others)
 * wait in line for the receiver and for this process's event loop: on a loaded machine a request's
 * time out is mostly the line ahead of it. So while the org's answers keep coming (one within
 * ANSWERS_FLOWING_MS before), a request is not judged by its age, and an answer's time is the
 * line's: it neither marks the org slow nor counts against its answering. A receiver that hangs
 * sends no answers, and is judged by its oldest request's age once its last answer is that old;
 * one that takes long over each request is marked slow by the first answer of a burst, which had
 * no answer before it. The gap allowed between answers is longer than RESPONSIVE_MS because a
 * loaded machine stalls this process, or the receiver's, for a few hundred milliseconds at a time
 * (two worker processes, their database and the receiver on two cores): a hanging receiver still
 * gives its job slots back within a second (deliver.ts, DETACH_AFTER_MS).
 *
 * How many companions of an org this process keeps out at once (companionRoom) follows what its
 * receivers absorb, not a constant: requests beyond that only wait in line (at the receiver, or in
 * an event loop on a loaded machine), each answer comes later, and none sooner. Several worker
 * processes each keeping a constant out multiply the line by their number, until attempts pass
 * RESPONSIVE_MS and DETACH_AFTER_MS and the org's deliveries take the paths kept for hanging
 * receivers (watch jobs, deferrals: more statements per delivery, each deferral's commit in the
 * server's one-at-a-time line of notifying commits). So each answer compares its time with the
 * org's fastest of late: within twice that (or QUEUE_ALLOWANCE_MS over it), the room grows; past
 * it, the room shrinks in proportion, as TCP Vegas and Netflix's gradient limiter do. Every
 * process sees the same line and shrinks with it, so together they keep about what the receivers
 * absorb, and a process added to a backlog adds its job slots, not a line.
 */

/** A request of the org out longer than this makes its receivers slow: a waiting attempt defers. */
const RESPONSIVE_MS = 200;
/** Deferred jobs remembered per org; beyond this, their own run_at brings them back. */
const DEFERRED_REMEMBERED = 10_000;
/** An attempt that took this long marks its org's receivers slow… */
const SLOW_ATTEMPT_MS = 1000;
/** …for this long, unless one of its attempts answers quickly first. */
const SLOW_MEMORY_MS = 60_000;

/** An org with an answer this recent has its answers coming: its requests out wait in line (see above). */
const ANSWERS_FLOWING_MS = 1000;

/** An org that answered an attempt within RESPONSIVE_MS this recently may go past its limit while alone. */
const ANSWERED_MEMORY_MS = 1000;

/**
 * Companions of one org out at once in one process at most (as many requests as its receivers get
 * at once from it, within the outbound agent's 256 sockets per host).
 */
export const COMPANIONS_MAX = 200;
/**
 * Delivery jobs one job takes along at most (deliver.ts): one statement's worth of an answering
 * org's backlog. It is also the least room for companions however long the line, so a backlog
 * still goes out in batches of that many per job and statement rather than one delivery per job.
 */
export const COMPANIONS_PER_JOB = 50;
/**
 * An answer that took longer than twice the org's fastest of late, and longer than that fastest and
 * this, waited in line: RESPONSIVE_MS, past which an answer no longer counts as one that answers.
 */
const QUEUE_ALLOWANCE_MS = RESPONSIVE_MS;
/** The org's fastest answer is the least of this window's and the one before: a receiver that turns slower is measured anew. */
const FASTEST_WINDOW_MS = 10_000;
/** Each answer moves the room this far toward what it suggests: many answers a second, each a noisy sample. */
const ROOM_SMOOTHING = 0.1;

/** An org's room for companions here, and the fastest answers it is judged against. */
interface CompanionRoom {
  room: number;
  fastestMs: number;
  /** when the current window of fastestMs began */
  windowAt: number;
  /** the window before's fastest */
  fastestBeforeMs: number;
}

/** Attempts of slow orgs may fill the worker's concurrency up to this, leaving a quarter (at least one slot) to the rest. */
export function slowBudget(capacity: number): number {
  return Math.max(1, capacity - Math.max(1, Math.ceil(capacity / 4)));
}

export interface TenantSlot {
  /**
   * The attempt's request goes out now (it was being opened in the database): its age, by which
   * the org's receivers are judged, counts from here.
   */
  sending(): void;
  /** Ends the attempt. True when the slot is free now (no waiting attempt took it over). */
  release(): boolean;
}

interface Taken {
  /** when its request went out; null while the attempt is being opened */
  sentAt: number | null;
  /** taken along by another job (accompany) */
  companion: boolean;
}

export class TenantSlots {
  /** attempts of one org in flight at once; 0: no limit */
  readonly limit: number;
  private readonly now: () => number;
  private readonly running = new Map<string, Set<Taken>>();
  private readonly waiting = new Map<string, Array<(slot: TenantSlot | null) => void>>();
  private readonly deferred = new Map<string, Set<string>>();
  private readonly slowUntil = new Map<string, number>();
  private readonly answeredAt = new Map<string, number>();
  /** when the org's latest answer came, however long it took */
  private readonly lastAnswerAt = new Map<string, number>();
  private inFlight = 0;
  /** attempts of each org in flight that hold a job slot (not companions) */
  private readonly held = new Map<string, number>();
  /** attempts of any org in flight up to which a slow org may start one; 0: no such limit */
  private readonly budget: number;
  private readonly companionRooms = new Map<string, CompanionRoom>();

  /** `capacity`: the worker's concurrency (0: slow orgs are limited only per org). */
  constructor(limit: number, now: () => number = () => performance.now(), capacity = 0) {
    this.limit = limit;
    this.now = now;
    this.budget = capacity > 0 ? slowBudget(capacity) : 0;
  }

  /** Whether `org`'s receivers are slow now: an attempt hangs, or a recent one took long. */
  slow(org: string): boolean {
    const until = this.slowUntil.get(org);
    if (until !== undefined && until > this.now()) return true;
    if (until !== undefined) this.slowUntil.delete(org);
    return !this.flowing(org) && this.oldestRequestMs(org) > RESPONSIVE_MS;
  }

  /** Whether the org's answers keep coming: one came within ANSWERS_FLOWING_MS. */
  private flowing(org: string): boolean {
    const last = this.lastAnswerAt.get(org);
    return last !== undefined && this.now() - last <= ANSWERS_FLOWING_MS;
  }

  /** How long, if nothing changes meanwhile, until the org's requests out would make it slow. */
  private slowInMs(org: string): number {
    const last = this.lastAnswerAt.get(org);
    const sinceAnswer = last === undefined ? Infinity : this.now() - last;
    return Math.max(1, RESPONSIVE_MS + 1 - this.oldestRequestMs(org), ANSWERS_FLOWING_MS + 1 - sinceAnswer);
  }

  /**
   * How long the org's oldest request in flight has been out (0: none out). Companions' requests
   * go out many at once, and on a loaded machine their answers wait their turn in this process's
   * event loop: their age says more of this process than of the receiver, so only their answers
   * are judged (a receiver that hangs answers late, or not within its timeout, and is judged then).
   */
  private oldestRequestMs(org: string): number {
    let oldest = 0;
    for (const taken of this.running.get(org) ?? []) if (taken.sentAt !== null && !taken.companion) oldest = Math.max(oldest, this.now() - taken.sentAt);
    return oldest;
  }

  /** A slot for one attempt of `org`, or null: defer the delivery. `jobId` is the job asking (forgotten as deferred). */
  acquire(org: string, jobId?: string): Promise<TenantSlot | null> {
    if (jobId) this.forget(org, jobId);
    if (this.budget > 0 && this.inFlight >= this.budget && this.slow(org)) return Promise.resolve(null);
    if (this.limit <= 0) return Promise.resolve(this.take(org));
    if (this.heldBy(org) < this.limit || this.alone(org)) return Promise.resolve(this.take(org));
    if (this.slow(org)) return Promise.resolve(null);
    return new Promise((resolve) => {
      const queue = this.waiting.get(org) ?? [];
      this.waiting.set(org, queue);
      let timer: NodeJS.Timeout;
      // Looked at again when the oldest request out would pass RESPONSIVE_MS with no answer since: turned away if it has.
      const watch = () => {
        timer = setTimeout(() => {
          if (!this.slow(org)) return watch();
          const at = queue.indexOf(granted);
          if (at >= 0) queue.splice(at, 1);
          if (queue.length === 0 && this.waiting.get(org) === queue) this.waiting.delete(org);
          resolve(null);
        }, this.slowInMs(org));
      };
      const granted = (slot: TenantSlot | null) => {
        clearTimeout(timer);
        resolve(slot);
      };
      queue.push(granted);
      watch();
    });
  }

  /**
   * A slot for a delivery taken along by a running job of its org (deliver.ts), while the org's
   * receivers answer: past the org's limit, and outside the count slow orgs are held to, because
   * it holds none of the worker's job slots. Its request is judged like any other, so an org whose
   * receivers turn slow stops taking more along. Null when the org's receivers are not answering.
   */
  accompany(org: string, jobId?: string): TenantSlot | null {
    if (jobId) this.forget(org, jobId);
    return this.answering(org) ? this.take(org, false) : null;
  }

  /** The orgs whose receivers answer now (`answering`). */
  answeringOrgs(): string[] {
    return [...this.answeredAt.keys()].filter((org) => this.answering(org));
  }

  /** Whether `org`'s receivers answer: one answered within RESPONSIVE_MS lately, and none is slow. */
  answering(org: string): boolean {
    const answered = this.answeredAt.get(org);
    return !this.slow(org) && answered !== undefined && this.now() - answered <= ANSWERED_MEMORY_MS;
  }

  private take(org: string, counted = true): TenantSlot {
    const running = this.running.get(org) ?? new Set<Taken>();
    this.running.set(org, running);
    const taken: Taken = { sentAt: null, companion: !counted };
    running.add(taken);
    if (counted) {
      this.inFlight += 1;
      this.held.set(org, this.heldBy(org) + 1);
    }
    let released = false;
    return {
      sending: () => {
        taken.sentAt = this.now();
      },
      release: () => {
        if (released) return false;
        released = true;
        running.delete(taken);
        if (counted) {
          this.inFlight -= 1;
          if (this.heldBy(org) > 1) this.held.set(org, this.heldBy(org) - 1);
          else this.held.delete(org);
        }
        // An attempt never sent (its opening failed or found nothing to send) says nothing of the receiver.
        if (taken.sentAt !== null) this.judge(org, this.now() - taken.sentAt);
        if (running.size === 0) this.running.delete(org);
        const queue = this.waiting.get(org);
        const next = this.heldBy(org) < this.limit || this.alone(org) ? queue?.shift() : undefined;
        if (queue?.length === 0) this.waiting.delete(org);
        if (next) {
          next(this.take(org));
          return false;
        }
        return true;
      },
    };
  }

  /**
   * How many companions of `org` may be out at once here: COMPANIONS_MAX until its answers show a
   * line, then what keeps its attempts near its fastest (see above).
   */
  companionRoom(org: string): number {
    return Math.floor(this.companionRooms.get(org)?.room ?? COMPANIONS_MAX);
  }

  /** An answer that took `took` ms moves the org's room for companions (see above). */
  private fitRoom(org: string, took: number): void {
    const now = this.now();
    let fit = this.companionRooms.get(org);
    if (!fit) {
      fit = { room: COMPANIONS_MAX, fastestMs: took, windowAt: now, fastestBeforeMs: Infinity };
      this.companionRooms.set(org, fit);
    }
    if (now - fit.windowAt > FASTEST_WINDOW_MS) {
      fit.fastestBeforeMs = fit.fastestMs;
      fit.fastestMs = took;
      fit.windowAt = now;
    } else fit.fastestMs = Math.min(fit.fastestMs, took);
    const fastest = Math.min(fit.fastestMs, fit.fastestBeforeMs);
    const target = Math.max(2 * fastest, fastest + QUEUE_ALLOWANCE_MS);
    const gradient = Math.min(1, Math.max(0.5, target / Math.max(took, 1)));
    const suggested = fit.room * gradient + Math.sqrt(fit.room);
    fit.room = Math.min(COMPANIONS_MAX, Math.max(COMPANIONS_PER_JOB, fit.room + (suggested - fit.room) * ROOM_SMOOTHING));
  }

  /** An attempt of `org` was answered (or failed) `took` ms after its request went out. */
  private judge(org: string, took: number): void {
    this.fitRoom(org, took);
    // An answer right behind another waited in line behind it: its time says nothing new of the receiver.
    const inLine = this.flowing(org);
    this.lastAnswerAt.set(org, this.now());
    if (took <= SLOW_ATTEMPT_MS) this.slowUntil.delete(org);
    else if (!inLine) this.slowUntil.set(org, this.now() + SLOW_MEMORY_MS);
    if (took <= RESPONSIVE_MS || inLine) this.answeredAt.set(org, this.now());
    else this.answeredAt.delete(org);
  }

  /** The org's attempts here that hold a job slot: its limit counts these, not the companions taken along. */
  private heldBy(org: string): number {
    return this.held.get(org) ?? 0;
  }

  /** Whether an attempt of `org` would get a slot at once. */
  hasRoom(org: string): boolean {
    if (this.budget > 0 && this.inFlight >= this.budget && this.slow(org)) return false;
    return this.limit <= 0 || this.heldBy(org) < this.limit || this.alone(org);
  }

  /** Whether `org` may go past its limit: no other org has attempts here, and its receivers answer (see above). */
  private alone(org: string): boolean {
    if (this.budget <= 0 || this.inFlight >= this.budget || !this.answering(org)) return false;
    // Deferred jobs do not count: some ran in another process and are never forgotten here.
    for (const held of [this.running, this.waiting]) {
      for (const other of held.keys()) if (other !== org) return false;
    }
    return true;
  }

  /** A job this process deferred for `org` (oldest first when brought forward). */
  deferredJob(org: string, jobId: string): void {
    const jobs = this.deferred.get(org) ?? new Set<string>();
    this.deferred.set(org, jobs);
    if (jobs.size < DEFERRED_REMEMBERED) jobs.add(jobId);
  }

  /** How many of `org`'s deferred jobs this process remembers: the queue ahead of the next one. */
  deferredCount(org: string): number {
    return this.deferred.get(org)?.size ?? 0;
  }

  /** The oldest deferred job of `org`, forgotten as it is handed out. */
  nextDeferred(org: string): string | undefined {
    const jobs = this.deferred.get(org);
    const first = jobs?.values().next().value;
    if (first !== undefined) this.forget(org, first);
    return first;
  }

  private forget(org: string, jobId: string): void {
    const jobs = this.deferred.get(org);
    if (jobs?.delete(jobId) && jobs.size === 0) this.deferred.delete(org);
  }
}
