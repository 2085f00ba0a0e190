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
  // FNV-1a over the whole seed first: reading only as many characters as the output needs made
  // every label set that starts alike (`{"alertname":…`) the same Alertmanager fingerprint.
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619) >>> 0;
  for (let i = 0; out.length < length; i++) {
    h = Math.imul(h ^ (i + 1), 16777619) >>> 0;
    out += (h & 0xfffff).toString(16).padStart(5, '0');
  }
  return out.slice(0, length);
}
/** A stable integer id from a seed. */
export const numId = (seed: string, digits = 9): number => parseInt(hex(seed, 12), 16) % 10 ** digits;
