import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Random bytes are drawn from the CSPRNG 4 KiB at a time: one call per 256 ids, not per id
// (ids are minted per event on the webhook path). A byte is used once, then the pool refills.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomSixteen(): Buffer {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 16;
  return pool.subarray(poolOffset - 16, poolOffset);
}

/** A ULID: 48-bit millisecond time + 80 random bits, Crockford base32, lexicographically time-sortable. */
export function ulid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomSixteen();
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[bytes[i]! % 32]!;
  return time + rand;
}

export type IdPrefix =
  | 'inc'
  | 'key'
  | 'exp'
  | 'svc'
  | 'skl'
  | 'ten'
  | 'evi'
  | 'pat'
  | 'fbk'
  | 'apr'
  | 'rem'
  | 'ntf'
  | 'trg'
  | 'sess'
  | 'msg'
  | 'evt'
  | 'oev'
  | 'aud'
  | 'req'
  | 'edg'
  | 'rbk'
  | 'ski'
  | 'alt'
  | 'crl';

export function newId(prefix: IdPrefix, now?: number): string {
  return `${prefix}_${ulid(now).toLowerCase()}`;
}
