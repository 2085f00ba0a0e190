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

let lastTime = -1;
let lastRandom: number[] = [];

/**
 * A ULID: 48-bit millisecond time + 80 random bits, Crockford base32, lexicographically
 * time-sortable. Ids of one millisecond are monotonic (the previous random part plus one), so
 * rows written together sort in the order they were made.
 */
export function ulid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  let digits: number[];
  if (now === lastTime && lastRandom.length === 16) {
    digits = [...lastRandom];
    let i = 15;
    while (i >= 0 && digits[i] === 31) digits[i--] = 0;
    if (i >= 0) digits[i]! += 1;
  } else {
    const bytes = randomSixteen();
    digits = Array.from({ length: 16 }, (_, i) => bytes[i]! % 32);
    // Room to count up within the millisecond.
    digits[0] = digits[0]! % 16;
  }
  lastTime = now;
  lastRandom = digits;
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[digits[i]!]!;
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
  | 'crl'
  | 'usr'
  | 'inv'
  | 'rtk'
  | 'int'
  | 'wsess'
  | 'wsub'
  | 'wkey'
  | 'wdel'
  | 'pay';

export function newId(prefix: IdPrefix, now?: number): string {
  return `${prefix}_${ulid(now).toLowerCase()}`;
}
