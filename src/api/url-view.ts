import type { Principal } from '../auth/tokens.js';

/** What a masked query value or fragment shows instead of its text. */
export const MASKED = '***';

/**
 * An outbound URL (a skill's, a trigger webhook's) as `viewer` may see it. Credentials in the
 * URL itself are refused when it is written (decision 177), but tools often take a token as a
 * query parameter; header values are the place for secrets (stored sealed, never returned), so
 * the query is kept whole only for admins, who write these URLs. Anyone else sees each query
 * parameter's name with its value masked, and a fragment masked: a member can tell which
 * endpoint a skill calls, not call it with the tenant's credential.
 */
export function urlForViewer(url: string, viewer: Pick<Principal, 'roles'>): string {
  if (viewer.roles.includes('admin')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return MASKED; // stored before it was validated: show nothing of it
  }
  if (parsed.search) {
    const names = [...parsed.searchParams.keys()];
    parsed.search = names.map((name) => `${encodeURIComponent(name)}=${MASKED}`).join('&');
  }
  if (parsed.hash) parsed.hash = MASKED;
  return parsed.toString();
}
