/** Seams a test hands to startTestApi / startTestWorker (api/seams.ts): time it moves, bytes it can predict. */
import { createHash } from 'node:crypto';
import type { RandomSource } from '../../api/seams.ts';

/** A clock that runs with the machine's but stands `offsetMs` ahead; `advance` moves it on without waiting. */
export function movableClock(offsetMs = 0): { clock: () => Date; advance: (ms: number) => void } {
  let offset = offsetMs;
  return { clock: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

/** The same bytes for the same seed, in the same order: sha256(seed:counter) blocks. */
export function seededRandom(seed: string): RandomSource {
  let counter = 0;
  return (bytes) => {
    const out = Buffer.alloc(bytes);
    for (let filled = 0; filled < bytes; counter++) filled += createHash('sha256').update(`${seed}:${counter}`).digest().copy(out, filled);
    return out;
  };
}
