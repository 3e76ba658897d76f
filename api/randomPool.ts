/**
 * `crypto.randomBytes` for the many small draws of ids (a request id on every request, object
 * ids, tokens): one `randomFillSync` fills 4 KiB and each draw copies its bytes out, never
 * handing a byte out twice. A draw larger than the pool goes to `randomBytes` itself.
 */
import { randomBytes, randomFillSync } from 'node:crypto';

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafeSlow(POOL_SIZE);
let used = POOL_SIZE;

export function pooledRandomBytes(size: number): Buffer {
  if (size > POOL_SIZE / 4) return randomBytes(size);
  if (used + size > POOL_SIZE) {
    randomFillSync(pool);
    used = 0;
  }
  const out = Buffer.from(pool.subarray(used, used + size));
  // The bytes given out are wiped, so a later read of the pool cannot see them.
  pool.fill(0, used, used + size);
  used += size;
  return out;
}
