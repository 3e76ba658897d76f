/**
 * Object ids (CONTRACT §1): a prefix, then 24 base62 characters: the time the id was minted (7,
 * `TIME_DIGITS`) and 17 random ones (101 bits). Ids minted later sort after earlier ones (to the
 * millisecond; those of one millisecond in random order), so a table's new rows, and the index
 * entries keyed on their ids (an audit event's object, a request's id), land at the right edge of
 * their indexes instead of at random pages of them: an audited create cost Postgres about half
 * as much more once its ids came in time order (bench/audit.ts). The time is the machine's clock,
 * not the domain clock seam: it is there for the indexes, and a test clock moved years ahead
 * would otherwise file its ids far from the rest. Ids, client tokens and key
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

/** In the order of the characters' codes, so a time written with them sorts as the time. */
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

/** The time is in milliseconds since 2020: 62^7 of them reach into 2131. */
const EPOCH_MS = Date.UTC(2020, 0, 1);
export const TIME_DIGITS = 7;
const RANDOM_DIGITS = 24 - TIME_DIGITS;
let timeMs = Number.NaN;
let timeText = '';

/** `now` in `TIME_DIGITS` base62 digits that sort as the time (the last millisecond's, when asked again). */
export function sortableTime(now = Date.now()): string {
  if (now !== timeMs) {
    timeMs = now;
    let left = Math.max(0, now - EPOCH_MS);
    let text = '';
    for (let i = 0; i < TIME_DIGITS; i++, left = Math.floor(left / 62)) text = ALPHABET[left % 62] + text;
    timeText = text;
  }
  return timeText;
}

export function newId(prefix: string, random: RandomSource = currentRandomSource()): string {
  return `${prefix}_${sortableTime()}${randomBase62(RANDOM_DIGITS, random)}`;
}
