/**
 * Object ids: a prefix and 24 random base62 characters (CONTRACT §1). Ids, client tokens and key
 * secrets draw their bytes from the random source of the process doing the work: `startWeb` and
 * `startWorker` run each request and each job under their `seams.random` (`withRandomSource`), so
 * a test that gives a process a seeded source gets that process's ids from it, while another
 * process in the same Node (a test's worker beside its web) keeps its own. Outside any of them
 * (the CLI, a test's own setup), and in production, the bytes come from `crypto.randomBytes` (drawn
 * from a pool: `randomPool.ts`).
 *
 * An async-context scope rather than a parameter: ids are minted in two dozen places (the engine,
 * the outbox, every family's rules) that already share the request's transaction, not a services
 * object; threading a source through each would change every one of them for a seam only tests use.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { pooledRandomBytes } from './randomPool.ts';
import type { RandomSource } from './seams.ts';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

const scope = new AsyncLocalStorage<RandomSource>();

/** Runs `work` (and everything it starts) with `random` as the source of ids and secrets. */
export function withRandomSource<T>(random: RandomSource, work: () => T): T {
  return scope.run(random, work);
}

/** The source in force here: the enclosing process's seam, or the system's. */
export function currentRandomSource(): RandomSource {
  return scope.getStore() ?? pooledRandomBytes;
}

export function randomBase62(length: number, random: RandomSource = currentRandomSource()): string {
  // 248 = 62 * 4: rejecting bytes above it keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function newId(prefix: string, random: RandomSource = currentRandomSource()): string {
  return `${prefix}_${randomBase62(24, random)}`;
}
