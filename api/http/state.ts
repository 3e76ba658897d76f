/** What the middleware chain learns about a request, in the order it learns it. */
import type { Logger } from 'pino';
import type { Db } from '../db/connection.ts';
import type { KeyRecord } from '../db/keys.ts';
import type { DomainServices, Principal, Tenant, Version } from '../engine/family.ts';
import type { Config } from '../config.ts';

export interface IdempotencyClaim {
  key: string;
  hash: string;
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
}
