/**
 * The dispatcher follows the events outbox on its own, so a writer enqueues nothing: no
 * `add_job` per committing transaction (an upsert on a shared job row, 1–2.5 ms of database time
 * each, and a queue of concurrent payments on that row; migration 20261123000080).
 *
 * Each worker process runs one loop: a pass (workers/webhooks/dispatch.ts) takes the events past
 * the position; while passes find events it runs them back to back, and once caught up it looks
 * again every `idleMs`. Passes of several workers take turns (an advisory lock, then a snapshot
 * taken after it; a loop that finds the turn taken looks again after `idleMs` instead of
 * waiting), so running one loop per worker is safe. The position is durable: a crash or restart resumes where the last
 * committed pass left it.
 *
 * A loop whose last pass took nothing looks with one cheap statement (eventsPending) and makes a
 * pass only when it finds something to take. Idle beside an outbox of 1M events, a worker's looks
 * every 20 ms cost Postgres 0.015 CPU s a second where full passes cost 0.10, and the process 0.03
 * where they cost 0.05. A loop whose pass took events makes the next pass straight away, as
 * traffic keeps coming.
 */
import type { Db } from '../../api/db/connection.ts';
import type { DispatchClaims } from './deliver.ts';
import { dispatchEventBatch, eventsPending, type DispatchClaim } from './dispatch.ts';
import { COMPANIONS_PER_JOB } from './tenantSlots.ts';

/** Events per dispatch pass. */
export const DISPATCH_BATCH = 500;

/**
 * Pacing a backlog. A pass claims each answering org's deliveries up to its room here and queues
 * the rest as jobs, which then cost a take (a statement, each job's row locked and written again,
 * its entries in the queue's indexes) before the same process, or another, attempts them. So once
 * a pass has queued deliveries of an org it could have claimed with more room (`overflow`), and
 * while passes of a backlog claim, the next pass waits for room to free (PACE_WAIT_FOR of it, at
 * most PACE_WAIT_MS) and takes no more events than it may claim: a backlog of answering orgs is
 * then claimed as it is attempted. Each org may claim PACE_AHEAD past its room, what ends while
 * a pass runs: claimed only into room already free, the attempts would wait on each pass. The
 * wait is short and bounded because other orgs' events wait with it; a loop caught up (live
 * traffic) never waits for room.
 *
 * Room counts deliveries and a pass's limit counts events, and an event makes a delivery for each
 * webhook of its trigger. A paced pass takes as many events as make the room's deliveries, by the
 * deliveries an event made in the last pass that took any. Limited to the room in events, a
 * backlog whose events each go to two webhooks would make twice what it can claim, and every
 * paced pass would queue the half past the room: in the drain of bench/webhooks.ts with two
 * webhooks (BENCH_DRAIN_WEBHOOKS), 0.56 of the deliveries then go through the queue against 0.19,
 * and a delivery costs 0.67–0.76 CPU ms (worker, Postgres, receiver) against 0.51–0.52.
 */
const PACE_ROOM = COMPANIONS_PER_JOB;
const PACE_WAIT_FOR = PACE_ROOM / 2;
const PACE_AHEAD = PACE_ROOM;
const PACE_WAIT_MS = 100;

function roomOf(claim: DispatchClaim | undefined): number {
  return claim ? claim.rooms.reduce((sum, { room }) => sum + room, 0) : 0;
}

export interface DispatchLoopOptions {
  /** events per pass */
  batch: number;
  /** how long a caught-up loop waits before looking again (also the wait after a failed pass, ×10) */
  idleMs: number;
  onError: (error: Error) => void;
  /**
   * The process's claims (dispatch.ts, DispatchClaim): each pass claims what they allow, under the
   * worker id `lockedBy` gives (none while it gives null), and hands the claimed deliveries to them.
   * `retire` gives up that id for a fresh one, so the jobs it holds are released: after a claiming
   * pass that failed (its commit may have gone through unanswered, leaving jobs claimed that no
   * one runs), and after claimed deliveries whose jobs could be neither completed nor given back.
   */
  claims?: { claims: DispatchClaims; lockedBy: () => string | null; retire: () => void };
  /** claimed deliveries whose run failed (a job neither completed nor given back) */
  onClaimFailed?: (error: Error) => void;
}

export interface DispatchLoop {
  /** finishes the pass in hand and the attempts of the deliveries passes claimed, and stops */
  stop: () => Promise<void>;
}

export function startDispatchLoop(db: Db, options: DispatchLoopOptions): DispatchLoop {
  let stopping = false;
  let wake: () => void = () => {};
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  /** claimed deliveries' attempts under way: a stop waits for them, as for a job runner's jobs */
  const attempting = new Set<Promise<void>>();
  const claimFor = () => {
    const lockedBy = options.claims?.lockedBy() ?? null;
    return { lockedBy, claim: lockedBy ? options.claims!.claims.claim(lockedBy) : undefined };
  };
  /** A paced pass's claim: once PACE_WAIT_FOR of room is free (PACE_WAIT_MS at most), each org's room and PACE_AHEAD more. */
  const pacedClaim = async () => {
    const until = performance.now() + PACE_WAIT_MS;
    let claiming = claimFor();
    while (claiming.claim && roomOf(claiming.claim) < PACE_WAIT_FOR && !stopping && performance.now() < until) {
      await options.claims!.claims.roomFreed(until - performance.now());
      claiming = claimFor();
    }
    const { lockedBy, claim } = claiming;
    return { lockedBy, claim: claim && { ...claim, rooms: claim.rooms.map(({ org, room }) => ({ org, room: room + PACE_AHEAD })) } };
  };
  const running = (async () => {
    let paced = false;
    /** deliveries an event makes, as the last pass that took events found: what a paced pass's room in deliveries holds in events */
    let fanout = 1;
    /** the last pass took nothing: the next looks before it is made */
    let idle = false;
    while (!stopping) {
      let lockedBy: string | null = null;
      try {
        if (idle && !(await eventsPending(db))) {
          await pause(options.idleMs);
          continue;
        }
        const claiming = paced ? await pacedClaim() : claimFor();
        // Paced to what it may claim (a room of deliveries, so as many events as make that many);
        // with no org to claim for, the full batch.
        const limit = paced && claiming.claim && claiming.claim.rooms.length > 0
          ? Math.min(options.batch, Math.max(1, Math.floor(roomOf(claiming.claim) / fanout))) : options.batch;
        // A stop asked for while the pass waited for room: no pass after it.
        if (stopping) break;
        ({ lockedBy } = claiming);
        const pass = await dispatchEventBatch(db, limit, claiming.claim);
        // A backlog that is being claimed stays paced until caught up (a pass at full size between
        // paced ones would queue its deliveries again); a pass that caught up ends the pacing, and
        // one that found another worker's pass running (it took nothing) leaves it as it was.
        if (!pass.turnTaken) paced = !pass.caughtUp && (pass.overflow > 0 || pass.claimed.length > 0);
        if (pass.taken > 0) fanout = Math.max(1, pass.made / pass.taken);
        idle = pass.taken === 0;
        if (lockedBy && pass.claimed.length > 0) {
          const attempts: Promise<void> = options.claims!.claims.run(pass.claimed, lockedBy)
            .catch((error: unknown) => {
              options.claims!.retire();
              options.onClaimFailed?.(error as Error);
            })
            .finally(() => attempting.delete(attempts));
          attempting.add(attempts);
        }
        if (pass.caughtUp || pass.turnTaken) await pause(options.idleMs);
      } catch (error) {
        if (lockedBy) options.claims!.retire();
        paced = false;
        idle = false;
        if (stopping) break;
        options.onError(error as Error);
        await pause(options.idleMs * 10);
      }
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      wake();
      await running;
      await Promise.all(attempting);
    },
  };
}
