/**
 * Signed download URLs of audit exports: `…/v1/audit/export/{exportId}/download?expires=…&signature=…`,
 * HMAC-SHA256 over the export id and the expiry, so no bearer token is needed to download and a
 * URL cannot be altered or extended.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** A completed export's download URL is valid this long after completion. */
export const DOWNLOAD_URL_TTL_MS = 2 * 60 * 60 * 1000;

/**
 * The signing key: EXPORT_URL_SECRET as given, else derived from the JWT secret with HKDF-SHA256
 * (info `audit-export-download-url`), so the token key itself never signs URLs.
 */
export function downloadUrlKey(options: {
  urlSecret: string | undefined;
  jwtSecret: string | undefined;
}): Buffer | undefined {
  if (options.urlSecret) return Buffer.from(options.urlSecret, 'utf8');
  if (options.jwtSecret) return Buffer.from(hkdfSync('sha256', options.jwtSecret, '', 'audit-export-download-url', 32));
  return undefined;
}

function signature(key: Buffer, exportId: string, expires: number): string {
  return createHmac('sha256', key).update(`v1\n${exportId}\n${expires}`).digest('base64url');
}

export function downloadPath(exportId: string): string {
  return `/v1/audit/export/${encodeURIComponent(exportId)}/download`;
}

/** The absolute signed URL of an export, valid until `expiresAt` (`expires` in epoch milliseconds). */
export function signDownloadUrl(key: Buffer, baseUrl: string, exportId: string, expiresAt: Date): string {
  const expires = expiresAt.getTime();
  return `${baseUrl}${downloadPath(exportId)}?expires=${expires}&signature=${signature(key, exportId, expires)}`;
}

/** True when the signature matches (constant-time compare) and the URL has not expired at `now`. */
export function verifyDownloadUrl(
  key: Buffer,
  exportId: string,
  expires: string | undefined,
  given: string | undefined,
  now: Date,
): boolean {
  if (!expires || !given || !/^\d{1,15}$/.test(expires)) return false;
  const expected = Buffer.from(signature(key, exportId, Number(expires)), 'utf8');
  const actual = Buffer.from(given, 'utf8');
  const matches = actual.length === expected.length && timingSafeEqual(actual, expected);
  return matches && Number(expires) > now.getTime();
}
