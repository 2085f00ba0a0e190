import type { Principal } from '../auth/tokens.js';

/** What a masked query value or fragment shows instead of its text. */
export const MASKED = '***';

/**
 * An outbound URL (a skill's, a trigger webhook's) as `viewer` may see it. Credentials in the
 * URL itself are refused when it is written, but tools often take a token as a
 * query parameter, and chat webhooks (Slack, Teams, Discord) carry theirs in the path; header
 * values are the place for secrets (stored sealed, never returned), so the URL is kept whole
 * only for admins, who write these URLs. Anyone else sees the scheme and host, each path
 * segment masked, each query parameter's name with its value masked, and a fragment masked: a
 * member can tell which service a skill calls, not call it with the tenant's credential.
 */
export function urlForViewer(url: string, viewer: Pick<Principal, 'roles'>): string {
  if (viewer.roles.includes('admin')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return MASKED; // stored before it was validated: show nothing of it
  }
  parsed.pathname = parsed.pathname
    .split('/')
    .map((segment) => (segment === '' ? segment : MASKED))
    .join('/');
  if (parsed.search) {
    const names = [...parsed.searchParams.keys()];
    parsed.search = names.map((name) => `${encodeURIComponent(name)}=${MASKED}`).join('&');
  }
  if (parsed.hash) parsed.hash = MASKED;
  return parsed.toString();
}
