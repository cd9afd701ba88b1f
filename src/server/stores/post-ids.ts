import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

// ulid's default PRNG makes a WebCrypto call per character (16 per id); one
// CSPRNG refill per 4 KiB keeps the ids as random for a fraction of the cost.
const randomPool = new Uint8Array(4096);
let randomAt = randomPool.length;
function pooledRandom(): number {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  return randomPool[randomAt++]! / 256;
}

/** A generator of post ids: ULIDs, increasing within this process even inside one millisecond. */
export function postIdFactory(): (time: number) => string {
  return monotonicFactory(pooledRandom);
}
