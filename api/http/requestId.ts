/**
 * Every response carries `X-Request-Id`, errors from the earliest middleware included. A client's
 * own id is honoured when it is a sane token (a proxy's or a load balancer's id joins the logs end
 * to end); anything else — empty, too long, spaces, control or quote characters — gets a fresh
 * `req_…` id instead, so a header can never smuggle text into logs or the audit history.
 */
import { newId } from '../ids.ts';
import { pooledRandomBytes } from '../randomPool.ts';

const SANE = /^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$/;

export function requestIdFor(incoming: string | undefined): string {
  // Drawn from the system, not the request's id source: a test's seeded ids stay what it expects.
  return incoming && SANE.test(incoming) ? incoming : newId('req', pooledRandomBytes);
}
