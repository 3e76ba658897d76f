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
 */
import type { Db } from '../../api/db/connection.ts';
import type { DispatchClaims } from './deliver.ts';
import { dispatchEventBatch } from './dispatch.ts';

/** Events per dispatch pass. */
export const DISPATCH_BATCH = 500;

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
  const running = (async () => {
    while (!stopping) {
      let lockedBy: string | null = null;
      try {
        lockedBy = options.claims?.lockedBy() ?? null;
        const pass = await dispatchEventBatch(db, options.batch, lockedBy ? options.claims!.claims.claim(lockedBy) : undefined);
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
