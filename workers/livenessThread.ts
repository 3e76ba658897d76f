/**
 * The worker process's heartbeat, in a thread of its own with a database connection of its own:
 * the process's work (jobs filling the event loop, queries queued for the job pool) cannot delay
 * it, so a process is declared dead only once it has really stopped (killed, machine lost), not
 * while it is busy. Silence is measured by the database's clock, never by a process's.
 *
 * The main thread (workers/main.ts) sends the worker ids it holds jobs under whenever they change;
 * this thread announces them every `intervalMs`, then releases the jobs of processes silent for
 * `deadAfterMs`, and reports each beat back. Stopped (after the process's jobs are done), it
 * takes its ids off the list.
 *
 * A process whose own thread has not turned its event loop for STALLED_BEATS × `deadAfterMs` (an
 * endless loop, a debugger's pause) has stopped too, though not dead: the thread goes silent for
 * it, so its jobs are released rather than held for graphile-worker's four hours. Busy work turns
 * the loop every few milliseconds; only a loop held that long is taken for stopped.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createDb } from '../api/db/connection.ts';
import { setDatabaseSilence } from '../api/db/silence.ts';
import { forgetWorkers, heartbeat, releaseDeadWorkers } from './liveness.ts';

/** The main thread's event loop held this many times WORKER_DEAD_AFTER: the process is taken for stopped. */
const STALLED_BEATS = 10;

export interface LivenessSettings {
  databaseUrl: string;
  /** SETTLE_DATABASE_SILENCE: the thread's connections are its own, watched with the process's bound */
  databaseSilenceMs: number;
  deadAfterMs: number;
  intervalMs: number;
}

/** What the thread reports after each beat: jobs released from silent processes, or the failure. */
export type BeatReport = { ok: true; released: number } | { ok: false; error: string };

export interface Liveness {
  /** the worker ids to announce from now on */
  announce: (workerIds: string[]) => void;
  /** resolves after the first beat that announced ids (or failed) */
  firstBeat: Promise<BeatReport>;
  stop: () => Promise<void>;
}

/** Starts the heartbeat thread; `onBeat` hears each beat's outcome. */
export function startLiveness(settings: LivenessSettings, onBeat: (report: BeatReport) => void): Liveness {
  const thread = new Worker(new URL(import.meta.url), { workerData: settings });
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  let first: (report: BeatReport) => void = () => {};
  const firstBeat = new Promise<BeatReport>((resolve) => (first = resolve));
  thread.on('message', (report: BeatReport) => {
    first(report);
    onBeat(report);
  });
  thread.on('error', (error) => {
    first({ ok: false, error: error.message });
    onBeat({ ok: false, error: error.message });
  });
  // Each turn of this thread's loop that the timer gets says the process still works.
  const turning = setInterval(() => thread.postMessage('turning'), settings.intervalMs).unref();
  return {
    announce: (workerIds) => thread.postMessage(workerIds),
    firstBeat,
    stop: async () => {
      clearInterval(turning);
      thread.postMessage('stop');
      await exited;
    },
  };
}

function runThread(settings: LivenessSettings): void {
  setDatabaseSilence(settings.databaseSilenceMs);
  const db = createDb(settings.databaseUrl, 1);
  let workerIds: string[] = [];
  let beating: Promise<void> | null = null;
  let stopping = false;
  let turnedAt = performance.now();
  const beat = () => {
    // A beat still waiting on the database is not doubled: the next one comes at its own time.
    if (beating || stopping || workerIds.length === 0) return;
    if (performance.now() - turnedAt > STALLED_BEATS * settings.deadAfterMs) return;
    beating = (async () => {
      try {
        await heartbeat(db, workerIds);
        parentPort!.postMessage({ ok: true, released: await releaseDeadWorkers(db, settings.deadAfterMs) } satisfies BeatReport);
      } catch (error) {
        parentPort!.postMessage({ ok: false, error: (error as Error).message } satisfies BeatReport);
      } finally {
        beating = null;
      }
    })();
  };
  const timer = setInterval(beat, settings.intervalMs);
  parentPort!.on('message', (message: string[] | 'turning' | 'stop') => {
    turnedAt = performance.now();
    if (message === 'turning') return;
    if (message !== 'stop') {
      workerIds = message;
      return beat();
    }
    stopping = true;
    clearInterval(timer);
    void (async () => {
      await beating;
      await forgetWorkers(db, workerIds).catch(() => {});
      await db.destroy();
      parentPort!.close();
    })();
  });
}

if (!isMainThread && (workerData as Partial<LivenessSettings> | null)?.intervalMs) runThread(workerData as LivenessSettings);
