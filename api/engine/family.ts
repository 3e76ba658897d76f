/**
 * How an object family is declared. A family is data: its table, id prefix, and fields, each with
 * where it is stored and how v1 and v2 show and accept it. The generic engine
 * (api/engine/operations.ts) reads these declarations; a family's own rules (validation across
 * fields, events) hang off `rules` and run inside the request's database transaction.
 */
import type { Db } from '../db/connection.ts';
import type { EventDraft, Trigger } from '../db/events.ts';
import type { StoredObject } from '../db/storedRow.ts';
import type { Principal, Tenant } from '../db/tenant.ts';
import type { PaymentProcessor } from '../processor.ts';
import type { ProcessorDecisions } from '../processorDecisions.ts';
import type { FieldSchema, FieldSpec, Version } from '../schema/fields.ts';

// A family's author imports the whole declaration from here; each type lives on the lowest floor
// that needs it (the field schema below the query compiler, rows and tenants below the repositories).
export type { FieldSchema, FieldSpec, FieldType, Version } from '../schema/fields.ts';
export { COLUMNS, apiPath, appliesTo } from '../schema/fields.ts';
export type { StoredObject } from '../db/storedRow.ts';
export type { Principal, Tenant } from '../db/tenant.ts';

/** Seams the domain needs from the process: clock, card vault, processor, timing settings. */
export interface DomainServices {
  now: () => Date;
  /** the sandbox unless a test replaces it (`startWeb(config, { seams: { processor } })`) */
  processor: PaymentProcessor;
  vault: {
    encrypt: (plain: string) => string;
    decrypt: (sealed: string) => string;
    fingerprint: (plain: string) => string;
  };
  /** how long an automatic-mode authorization may wait for capture */
  authorizationWindowMs: number;
  /** how long a v2 `processing` transaction takes to complete */
  processingDelayMs: number;
}

/**
 * Writes a create's rules plan while they complete its rows (a client token's use, a method typed
 * into a payment): the door runs them in order at its write step, after every question to the
 * processor is answered and before the created rows; once it has (`open` false), they run at once.
 */
export interface PlannedWrites {
  open: boolean;
  writes: Array<() => Promise<unknown>>;
}

export interface RuleContext {
  tx: Db;
  tenant: Tenant;
  version: Version;
  principal: Principal;
  domain: DomainServices;
  /** Values shown once, in this response only (a generated secret), by object id. */
  revealed?: Map<string, Record<string, unknown>>;
  /** Set once this request has spent its client token's one use (a payment and its inline method are one use). */
  clientTokenSpent?: boolean;
  /** Child objects named in a create's body (by parent id), created once the parent row is written. */
  nestedInputs?: Map<string, unknown[]>;
  /** Refund amounts already planned in this request, by original payment id (bulk items, repeated links). */
  plannedRefunds?: Map<string, number>;
  /** Money already released in this request (bulk deposits), by processing account id. */
  plannedReleases?: Map<string, number>;
  /** Accounts this request has already read in the tenant: a rule need not look them up again. */
  knownAccounts?: Set<string>;
  /**
   * Rows whose change through the door is under way, by id: a rule of another row that would
   * change one of them leaves it to that change (an account setting its default method marks the
   * method, whose rule would otherwise point the account at it again).
   */
  changing?: Set<string>;
  /** Rows this request created, by id: their children are what the request wrote, no need to read them back. */
  createdNow?: Set<string>;
  /** The processor's answers for the cards this create charges, asked outside any database transaction. */
  decisions?: ProcessorDecisions;
  /** Writes the rules of a create being planned put off to the door's write step (operations.ts `atWrite`). */
  plannedWrites?: PlannedWrites;
  /** Set when the caller e-mails the customer itself (an invoice's e-mail names the link made for it): a payment link made here sends none of its own. */
  callerEmailsCustomer?: boolean;
}

/**
 * How a family plans a single create on the pool, for a hot path (the create door in
 * api/engine/operations.ts runs it): `plan` completes the decoded row by the family's rules,
 * reading what it needs and asking the processor, outside any database transaction; the door then
 * writes the plan by `statement`, alone or grouped with others of its kind (group commit).
 * `plan` answers null when the row needs the rules inside a transaction (linked refunds, splits, …).
 */
export interface CreateSteps<Plan = unknown> {
  plan: (ctx: RuleContext & { collection: Collection }, decoded: StoredObject) => Promise<Plan | null>;
  /**
   * One statement storing one plan or a group of them, each audited with its own actor, with its
   * events; answers the created rows in order. Default: the plan is a `PlannedRow`, its row stored
   * with its audit event and its events.
   */
  statement?: (db: Db, items: Array<PlannedItem<Plan>>) => Promise<StoredObject[]>;
}

/** A one-row create planned on the pool: the completed row and the outbox events its creation causes. */
export interface PlannedRow {
  row: StoredObject;
  events: EventDraft[];
}

/** A plan to write, with its tenant and the actor that made it (its `settle.audit` setting). */
export interface PlannedItem<Plan> {
  tenant: Tenant;
  plan: Plan;
  audit: string | null;
}

export interface FamilyRules {
  /** Completes a row before validation: resolve references, create dependent rows, decide a status. */
  prepare?: (ctx: RuleContext, next: StoredObject, previous: StoredObject | null) => Promise<StoredObject>;
  /** Writes that follow a stored change in the same transaction (dependent rows, timed jobs). */
  afterWrite?: (ctx: RuleContext, next: StoredObject, previous: StoredObject | null) => Promise<void>;
  /** Adds derived data (related rows) to rows about to be rendered; `include` holds requested non-default fields. */
  load?: (ctx: RuleContext, rows: StoredObject[], include: Set<string>) => Promise<void>;
  /** Cross-field and cross-object checks before a row is written; throw ApiError to reject. */
  validate?: (ctx: RuleContext, next: StoredObject, previous: StoredObject | null) => Promise<void>;
  /** Refuses a delete (e.g. of an object other rows depend on); throw ApiError to reject. */
  beforeDelete?: (ctx: RuleContext, rows: StoredObject[]) => Promise<void>;
  /** Events a change causes, recorded in the same transaction (`previous` null on create, `next` null on delete). */
  events?: (ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null) => EventDraft[];
  /**
   * A created row answered as an error although it committed (a stored decline): the error, built
   * from the rendered answer. The same for every path that creates the family's rows.
   */
  answerAsError?: (created: StoredObject) => ((rendered: Record<string, unknown>) => Error) | undefined;
  /** A single create planned on the pool (see CreateSteps); the door runs the rules in a transaction when absent or when it declines. */
  createSteps?: CreateSteps<any>;
  /**
   * Whether a change of one row, decoded onto the row it replaces (before the family's rules),
   * writes that row (and its events) and nothing else: prepare and validate only read, what they
   * decide does not depend on fields the change leaves alone, and the change has no afterWrite
   * work. The update door then plans it on the pool and its one statement applies it to the row as
   * it finds it (group commit), with its events, drafted from the row as read, only while the row
   * is still as read; otherwise, or when absent, the change runs in a transaction. The events a
   * change causes must follow from what it changes: a change that causes none is written over any
   * change that landed meanwhile.
   */
  plainChange?: (next: StoredObject, previous: StoredObject) => boolean;
  /**
   * Whether a delete of this row deletes that row and nothing else: beforeDelete only reads, and
   * what it decides holds without the row's lock. The delete door then plans it on the pool and
   * its one statement deletes the row (if still as read) with its audit event and events (group
   * commit); otherwise, or when absent, the delete runs in a transaction.
   */
  plainDelete?: (row: StoredObject) => boolean;
}

export interface Family extends FieldSchema {
  /** singular name, used in events (`object_type`) */
  name: string;
  table: string;
  idPrefix: string;
  /** allowed values of the `type` column */
  types: string[];
  /** the type a create gets when its body names none (default: the only type, if there is one) */
  createType?: string;
  fields: FieldSpec[];
  /** the `object` key of a rendered row */
  objectName: (version: Version, type: string) => string;
  rules?: FamilyRules;
  /**
   * Webhook triggers this family's changes fire (spec §6): a webhook may subscribe to them. The
   * registry (api/families/index.ts) collects every family's into the webhooks' `trigger` values.
   */
  triggers?: readonly Trigger[];
  /**
   * What a client token may do with this family's objects, by the token's intent kind (`none`: a
   * token made without an intent). The registry turns each into routes over the family's
   * collections; an intent kind no family names may call nothing (CONTRACT §9).
   */
  clientScopes?: ClientScopes;
}

/** Intent kind → the operations its client tokens may call on a family (today only `create`: POST to its collection). */
export type ClientScopes = Record<string, Array<'create'>>;

/** A URL collection over a family, optionally pinned to one type (`/customers` → type customer). */
export interface Collection {
  path: string;
  family: Family;
  fixedType?: string;
  /** written only by the service (webhook logs) */
  readOnly?: boolean;
  /** default order when the client gives none (logs: newest first) */
  newestFirst?: boolean;
}
