/**
 * Who is acting, for the audit history. The audit triggers (migration 20261126000300) read the
 * transaction-local setting `settle.audit`; this module holds the actor of the work under way (a
 * request, a worker job, a CLI command) in an async context, and the database layer hands it to
 * every transaction it begins, in the same round trip as BEGIN (api/db/connection.ts). A write
 * that runs as one statement outside a transaction carries it in the statement itself
 * (`AUDIT_SETTING_SQL`).
 *
 * An async-context scope rather than a parameter for the reason ids are one (api/ids.ts): the
 * transactions of a request or a job are opened in dozens of places that share nothing else.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { editDatabaseUrl } from './primary.ts';

export const ACTOR_TYPES = ['secret_key', 'client_token', 'console', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export interface AuditActor {
  type: ActorType;
  /** the key's prefix as `settle keys list` shows it (secret keys, console) or the client token's */
  key_prefix?: string;
  /** the key's or token's label, the CLI command, or the worker job */
  name?: string;
}

export interface AuditContext {
  actor: AuditActor;
  request_id?: string;
  ip?: string;
}

interface Scope {
  context: AuditContext;
  /** made when a statement first needs it: a read never does */
  setting: string | null;
}

const scope = new AsyncLocalStorage<Scope>();

/** Runs `work` (and everything it starts) as `context`'s actor. */
export function runAudited<T>(context: AuditContext, work: () => T): T {
  return scope.run({ context, setting: null }, work);
}

/** The value of `settle.audit` for the work under way, or null when no actor is known here. */
export function currentAuditSetting(): string | null {
  const store = scope.getStore();
  if (!store) return null;
  return (store.setting ??= JSON.stringify(store.context));
}

export function currentAuditContext(): AuditContext | null {
  return scope.getStore()?.context ?? null;
}

/**
 * A select-list or FROM item that sets the actor for the statement it is part of (one bound
 * parameter: `currentAuditSetting()`); without one, the session's own actor stays.
 */
export const AUDIT_SETTING_SQL = `set_config('settle.audit', coalesce(?::text, current_setting('settle.audit', true), ''), true)`;

/**
 * A connection string whose sessions act as `context` unless a transaction says otherwise: the
 * CLI and the worker are then the actor of every statement they send, single statements included.
 */
export function actingDatabaseUrl(url: string, context: AuditContext): string {
  const value = JSON.stringify(context).replace(/[\\ ]/g, (c) => `\\${c}`);
  return editDatabaseUrl(url, (parsed) => {
    const existing = parsed.searchParams.get('options');
    parsed.searchParams.set('options', `${existing ? `${existing} ` : ''}-c settle.audit=${value}`);
  });
}
