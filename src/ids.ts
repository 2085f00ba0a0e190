import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A ULID: 48-bit millisecond time + 80 random bits, Crockford base32, lexicographically time-sortable. */
export function ulid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[bytes[i]! % 32]!;
  return time + rand;
}

export type IdPrefix =
  | 'inc' | 'key' | 'exp' | 'svc' | 'skl' | 'ten' | 'evi' | 'pat' | 'fbk' | 'apr' | 'rem' | 'ntf'
  | 'trg' | 'sess' | 'msg' | 'evt' | 'oev' | 'aud' | 'req' | 'edg' | 'rbk' | 'ski';

export function newId(prefix: IdPrefix, now?: number): string {
  return `${prefix}_${ulid(now).toLowerCase()}`;
}
