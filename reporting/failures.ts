/**
 * A failure that repeats (ClickHouse down, Postgres restarting) is logged once when it starts, as
 * a reminder while it lasts, and once when it ends: never a line per retry, pass or request.
 */
import type { Logger } from 'pino';

const REMIND_MS = 60_000;

export class FailureLog {
  readonly #log: Logger;
  readonly #what: string;
  readonly #remindMs: number;
  #since = 0;
  #failures = 0;
  #remindedAt = 0;

  constructor(log: Logger, what: string, remindMs = REMIND_MS) {
    this.#log = log;
    this.#what = what;
    this.#remindMs = remindMs;
  }

  get failing(): boolean {
    return this.#since !== 0;
  }

  failed(error: unknown, fields: Record<string, unknown> = {}): void {
    const now = Date.now();
    this.#failures += 1;
    if (this.#since === 0) {
      this.#since = now;
      this.#remindedAt = now;
      this.#log.error({ err: error, ...fields }, `${this.#what} failing`);
    } else if (now - this.#remindedAt >= this.#remindMs) {
      this.#remindedAt = now;
      this.#log.warn({ err: error instanceof Error ? error.message : String(error), failures: this.#failures, failing_ms: now - this.#since, ...fields }, `${this.#what} still failing`);
    }
  }

  succeeded(): void {
    if (this.#since === 0) return;
    this.#log.info({ failures: this.#failures, failing_ms: Date.now() - this.#since }, `${this.#what} recovered`);
    this.#since = 0;
    this.#failures = 0;
  }
}
