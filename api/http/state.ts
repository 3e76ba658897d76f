/** What the middleware chain learns about a request, in the order it learns it. */
import type { Logger } from 'pino';
import type { Db } from '../db/connection.ts';
import type { KeyRecord } from '../db/keys.ts';
import type { DomainServices, Principal, Tenant, Version } from '../engine/family.ts';
import type { Config } from '../config.ts';

export interface IdempotencyClaim {
  key: string;
  hash: string;
  /** the claim's holder: only it may store the key's answer */
  claimant: string;
  /** set once the response was stored inside the request's own transaction */
  completed: boolean;
}

export interface AppServices {
  db: Db;
  config: Config;
  log: Logger;
  domain: DomainServices;
}

export interface RequestState {
  requestId: string;
  log: Logger;
  services: AppServices;
  /** the presented key's or client token's prefix (the secret without its last 24 characters) */
  keyPrefix?: string;
  key?: KeyRecord;
  /** a restricted key reading a collection it may read one type of: only rows of that type */
  readableType?: string;
  tenant?: Tenant;
  principal?: Principal;
  version: Version;
  body?: Record<string, unknown>;
  idempotency?: IdempotencyClaim;
  /** adds fields to every line the request's logger writes */
  bindLog(bindings: Record<string, unknown>): void;
}

/**
 * Koa's `ctx.state` for one request. Its logger is made on first use, a child of the process's
 * with the request id and whatever `bindLog` adds before then (the key's org and environment):
 * most requests log nothing at the configured level, and two children per request cost more than
 * rendering the answer.
 */
export class RequestScope implements RequestState {
  readonly requestId: string;
  readonly services: AppServices;
  keyPrefix?: string;
  key?: KeyRecord;
  readableType?: string;
  tenant?: Tenant;
  principal?: Principal;
  /** set by the version middleware; unset before it (a request refused earlier has none) */
  declare version: Version;
  body?: Record<string, unknown>;
  idempotency?: IdempotencyClaim;
  #log: Logger | null = null;
  readonly #bindings: Record<string, unknown>;

  constructor(requestId: string, services: AppServices) {
    this.requestId = requestId;
    this.services = services;
    this.#bindings = { req: requestId };
  }

  get log(): Logger {
    return (this.#log ??= this.services.log.child(this.#bindings));
  }

  set log(log: Logger) {
    this.#log = log;
  }

  bindLog(bindings: Record<string, unknown>): void {
    if (this.#log) this.#log = this.#log.child(bindings);
    else Object.assign(this.#bindings, bindings);
  }
}
