/**
 * The actor of an authenticated request, for the audit history: the secret key (or the console
 * signed in with one) or the client token, with the request's id and address; and that of a
 * hosted page's change. Every transaction the request opens carries it (api/db/auditContext.ts).
 */
import type { Context, Next } from 'koa';
import { runAudited, type AuditActor } from '../db/auditContext.ts';
import type { RequestState } from './state.ts';

/** The console says so on each of its calls; the key it signed in with stays the authority. */
export const CONSOLE_HEADER = 'X-Settle-Console';

function actorOf(ctx: Context & { state: RequestState }): AuditActor {
  const { principal, keyPrefix } = ctx.state;
  if (principal?.kind === 'client') {
    return { type: 'client_token', key_prefix: keyPrefix, name: Object.keys(principal.intent)[0] ?? 'none' };
  }
  return { type: ctx.get(CONSOLE_HEADER) ? 'console' : 'secret_key', key_prefix: ctx.state.key?.key_prefix ?? keyPrefix };
}

export async function auditActor(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  await runAudited({ actor: actorOf(ctx), request_id: ctx.state.requestId, ip: ctx.ip }, next);
}

/** The hosted pages that change objects (api/browser), as their audit events name them. */
export const HOSTED_PAGES = { enroll: 'page:enroll', processingAccount: 'page:processing_account' } as const;
export type HostedPage = (typeof HOSTED_PAGES)[keyof typeof HOSTED_PAGES];

/**
 * A hosted page's change: no key signs it, so the page and the capability in its address act —
 * a client token (by its prefix) or an enrollment link (by its id) — as a client token does
 * through the API, with the request's id and address.
 */
export function runAsPage<T>(ctx: Context & { state: RequestState }, page: HostedPage, capability: string, work: () => Promise<T>): Promise<T> {
  return runAudited({ actor: { type: 'client_token', key_prefix: capability, name: page }, request_id: ctx.state.requestId, ip: ctx.ip }, work);
}
