/**
 * The supervisor behind `settle up`: runs the web, worker and reporting processes, restarts one
 * that dies with exponential backoff, and on stop drains them all within a bounded time.
 *
 * A child that exits while we are not stopping is restarted after 0.5 s, then 1 s, 2 s, … up to
 * 30 s; a child that stayed up a minute starts again from 0.5 s. Stopping sends SIGTERM to every
 * running child (each drains its in-flight work for SETTLE_SHUTDOWN_TIMEOUT), SIGKILL to any still
 * alive KILL_GRACE_MS after that, and cancels pending restarts.
 *
 * Each child also ends when the supervisor ends without stopping it (SIGKILL, a crash): it is
 * started with bin/exitWithParent.ts preloaded and an IPC channel whose close it watches.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { labelledLines, type LineView } from './logLines.ts';

export interface Backoff {
  /** delay before the first restart. Default 500 ms. */
  initialMs: number;
  /** the delay doubles per consecutive restart up to this. Default 30 s. */
  maxMs: number;
  /** a child up this long counts as healthy: its next restart waits initialMs again. Default 60 s. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000, resetAfterMs: 60_000 };

/** Past the children's own drain deadline: time to close their pools and exit before SIGKILL. */
export const KILL_GRACE_MS = 2000;

/** How long a stopped child's remaining output is waited for. */
const OUTPUT_WAIT_MS = 500;

const EXIT_WITH_PARENT = new URL('./exitWithParent.ts', import.meta.url).href;

/** The wait before restart number `restarts` (0-based) of a child. */
export function restartDelay(restarts: number, backoff: Backoff = DEFAULT_BACKOFF): number {
  return Math.min(backoff.initialMs * 2 ** Math.min(restarts, 30), backoff.maxMs);
}

export interface ChildSpec {
  /** the label of its log lines, and its key in `pids()` */
  name: string;
  /** path of its entry point, relative to `root` */
  script: string;
  /** node's own flags for it (V8's), before the entry point */
  nodeFlags?: string[];
}

export interface SupervisorOptions {
  root: string;
  env: NodeJS.ProcessEnv;
  /** SETTLE_SHUTDOWN_TIMEOUT: what each child is given to drain before the supervisor kills it */
  drainTimeoutMs: number;
  backoff?: Backoff;
  /** past drainTimeoutMs, before SIGKILL. Default KILL_GRACE_MS. */
  killGraceMs?: number;
  /** one line, ready to print, per child output line and per supervision event */
  print: (line: string) => void;
  /** how a line from a child or of the supervisor is shown. Default labelledLines (`web      | …`). */
  view?: LineView;
  /** called whenever a child started or exited, with the pids of those running now */
  onPidsChanged?: (pids: Record<string, number>) => void;
  /** runs a restart after its delay and answers how to cancel it; default a timer (a test runs restarts itself) */
  scheduleRestart?: (restart: () => void, delayMs: number) => () => void;
}

function restartTimer(restart: () => void, delayMs: number): () => void {
  const timer = setTimeout(restart, delayMs);
  return () => clearTimeout(timer);
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(2))} s`;
}

/** One supervised process: the current incarnation, its restart count and any pending restart. */
class Supervised {
  process: ChildProcess | null = null;
  exited: Promise<void> = Promise.resolve();
  /** its output has been read to the end */
  closed: Promise<void> = Promise.resolve();
  startedAt = 0;
  restarts = 0;
  /** cancels the restart waiting out its delay */
  pendingRestart: (() => void) | null = null;
  readonly spec: ChildSpec;

  constructor(spec: ChildSpec) {
    this.spec = spec;
  }
}

export class Supervisor {
  private readonly children: Supervised[];
  private readonly options: SupervisorOptions;
  private readonly backoff: Backoff;
  private readonly view: LineView;
  private stopping: Promise<void> | null = null;

  constructor(specs: ChildSpec[], options: SupervisorOptions) {
    this.children = specs.map((spec) => new Supervised(spec));
    this.options = options;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.view = options.view ?? labelledLines;
  }

  start(): void {
    for (const child of this.children) this.launch(child);
  }

  /** The pids of the children running now. */
  pids(): Record<string, number> {
    const pids: Record<string, number> = {};
    for (const child of this.children) if (child.process?.pid && isAlive(child.process)) pids[child.spec.name] = child.process.pid;
    return pids;
  }

  /** Drains every child; calling it again returns the same promise. */
  stop(): Promise<void> {
    this.stopping ??= Promise.all(this.children.map((child) => this.drain(child))).then(() => undefined);
    return this.stopping;
  }

  private print(line: string): void {
    this.options.print(this.view('settle', line));
  }

  private launch(child: Supervised): void {
    child.pendingRestart = null;
    // Own process group: a terminal's Ctrl-C does not reach the children; `settle up` stops them in order.
    const proc = spawn(process.execPath, [...(child.spec.nodeFlags ?? []), '--import', EXIT_WITH_PARENT, path.join(this.options.root, child.spec.script)], {
      env: this.options.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    child.process = proc;
    child.startedAt = Date.now();
    for (const stream of [proc.stdout, proc.stderr]) {
      if (stream) readline.createInterface({ input: stream }).on('line', (line) => this.options.print(this.view(child.spec.name, line)));
    }
    child.closed = new Promise((resolve) => proc.once('close', () => resolve()));
    child.exited = new Promise((resolve) => {
      let reported = false;
      const ended = (reason: string) => {
        if (reported) return;
        reported = true;
        resolve();
        this.exitedUnexpectedly(child, reason);
      };
      // 'exit' reports a signal death too (code null, signal set), unlike polling exitCode.
      proc.once('exit', (code, signal) => ended(signal ? `signal ${signal}` : `code ${code}`));
      // A spawn that failed (no pid) emits 'error' and may never emit 'exit'. Any other 'error'
      // (a signal that could not be sent) needs a listener too, or it would end `settle up`.
      proc.on('error', (error) => {
        if (proc.pid === undefined) ended(`failed to start: ${error.message}`);
      });
    });
    if (proc.pid !== undefined) {
      this.print(`${child.spec.name} started (pid ${proc.pid})`);
      this.options.onPidsChanged?.(this.pids());
    }
  }

  private exitedUnexpectedly(child: Supervised, reason: string): void {
    if (this.stopping) return;
    this.options.onPidsChanged?.(this.pids());
    const upFor = Date.now() - child.startedAt;
    if (upFor >= this.backoff.resetAfterMs) child.restarts = 0;
    const delay = restartDelay(child.restarts, this.backoff);
    child.restarts += 1;
    this.print(`${child.spec.name} exited (${reason}) after ${seconds(upFor)}; restarting in ${seconds(delay)} (restart ${child.restarts})`);
    child.pendingRestart = (this.options.scheduleRestart ?? restartTimer)(() => this.launch(child), delay);
  }

  private async drain(child: Supervised): Promise<void> {
    child.pendingRestart?.();
    child.pendingRestart = null;
    const proc = child.process;
    if (!proc || !isAlive(proc)) return;
    proc.kill('SIGTERM');
    const grace = this.options.killGraceMs ?? KILL_GRACE_MS;
    const killAfter = this.options.drainTimeoutMs + grace;
    const kill = setTimeout(() => {
      this.print(`${child.spec.name} (pid ${proc.pid}) still running ${seconds(killAfter)} after SIGTERM; sending SIGKILL`);
      proc.kill('SIGKILL');
    }, killAfter);
    // SIGKILL cannot be refused, but a process stuck in the kernel may not report its exit: stop waiting.
    const giveUp = new Promise<void>((resolve) => setTimeout(resolve, killAfter + grace).unref());
    await Promise.race([child.exited, giveUp]);
    clearTimeout(kill);
    // Its last lines ("draining", errors) are worth printing; a grandchild holding the pipe is not worth waiting for.
    await Promise.race([child.closed, new Promise((resolve) => setTimeout(resolve, OUTPUT_WAIT_MS).unref())]);
  }
}

function isAlive(proc: ChildProcess): boolean {
  return proc.exitCode === null && proc.signalCode === null;
}
