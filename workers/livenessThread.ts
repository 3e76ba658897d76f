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
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createDb } from '../api/db/connection.ts';
import { forgetWorkers, heartbeat, releaseDeadWorkers } from './liveness.ts';

export interface LivenessSettings {
  databaseUrl: string;
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
  return {
    announce: (workerIds) => thread.postMessage(workerIds),
    firstBeat,
    stop: async () => {
      thread.postMessage('stop');
      await exited;
    },
  };
}

function runThread(settings: LivenessSettings): void {
  const db = createDb(settings.databaseUrl, 1);
  let workerIds: string[] = [];
  let beating: Promise<void> | null = null;
  let stopping = false;
  const beat = () => {
    // A beat still waiting on the database is not doubled: the next one comes at its own time.
    if (beating || stopping || workerIds.length === 0) return;
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
  parentPort!.on('message', (message: string[] | 'stop') => {
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
