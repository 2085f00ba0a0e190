/**
 * Corpus minutes are relative to the first page (0). The page sits 20 minutes before the corpus
 * loads, so deliveries up to 15 minutes after it still carry times in the past.
 */
import { at } from '../../scenarios/payloads.js';

export const PAGE_AT = -20;
/** The latest minute a delivery may carry (after the page). */
export const LAST_MINUTE = 15;

/** Minutes relative to the page, in the scenario builders' clock (minutes from the corpus' load). */
export const shift = (minute: number): number => minute + PAGE_AT;
/** ISO time of a corpus minute. */
export const iso = (minute: number): string => at(shift(minute));
/** Epoch milliseconds of a corpus minute. */
export const epochMs = (minute: number): number => Date.parse(iso(minute));
/** A stable hex string of `length` from a seed (ids, shas, fingerprints). */
export function hex(seed: string, length = 40): string {
  let out = '';
  let h = 2166136261;
  for (let i = 0; out.length < length; i++) {
    h ^= seed.charCodeAt(i % Math.max(seed.length, 1)) + i;
    h = Math.imul(h, 16777619) >>> 0;
    out += (h & 0xfffff).toString(16).padStart(5, '0');
  }
  return out.slice(0, length);
}
/** A stable integer id from a seed. */
export const numId = (seed: string, digits = 9): number => parseInt(hex(seed, 12), 16) % 10 ** digits;
