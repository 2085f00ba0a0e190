/**
 * Changes that are not a deploy of the service's own code: a feature flag flipped, and a
 * dependency bumped. Each names the flag or the library, and the action undoes that change
 * (turn the flag off, revert the bump) instead of rolling back a whole release.
 */
import {
  alertLine,
  formatDuration,
  hhmm,
  lower,
  minutesBetween,
  ms,
  proximity,
  quote,
  sha7,
  textOf,
  isProduction,
} from './text.js';
import { type ChangeObservation, type Hypothesis } from './types.js';
import { draft, type View } from './view.js';

/** Where a flag was flipped (`LaunchDarkly`, `Unleash`…), from the provider name. */
const TOOL: Record<string, string> = {
  launchdarkly: 'LaunchDarkly',
  unleash: 'Unleash',
  flagsmith: 'Flagsmith',
  generic: 'the flag service',
};

/** Does any alert text name `word` as a whole token (flag keys are often kebab or snake case)? */
function named(v: View, word: string): boolean {
  const w = lower(word).trim();
  if (w.length < 3) return false;
  const re = new RegExp(`(^|[^a-z0-9])${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^a-z0-9]|$)`, 'i');
  return v.scope.some((a) => re.test(textOf(a))) || v.all.some((a) => re.test(textOf(a)));
}

export function featureFlag(v: View): Hypothesis[] {
  const flips = v.input.changes.filter((c) => c.changeType === 'feature_flag');
  const latest = new Map<string, ChangeObservation>();
  for (const c of flips) {
    const key = `${lower(c.flag ?? c.title)}:${lower(c.environment)}`;
    const seen = latest.get(key);
    if (!seen || ms(c.occurredAt) > ms(seen.occurredAt)) latest.set(key, c);
  }
  const out: Hypothesis[] = [];
  for (const c of latest.values()) {
    const minutesBefore = minutesBetween(c.occurredAt, v.first);
    const p = proximity(minutesBefore);
    if (p <= 0) continue;
    const flag = c.flag ?? c.title;
    const mentioned = named(v, flag);
    const support = [
      `feature flag ${flag} changed${c.environment ? ` in ${c.environment}` : ''}${c.author ? ` by ${c.author}` : ''} ${formatDuration(minutesBefore)} before the first alert${c.description ? ` (${quote(c.description, 80)})` : ''}`,
    ];
    const against: string[] = [];
    let score = 0.45 + 0.35 * p + (c.hops === 0 ? 0.05 : 0);
    if (mentioned) {
      score += 0.15;
      support.push(`the failing alerts name ${flag}`);
    }
    if (c.matchedBy === 'mention' && !mentioned) score -= 0.1;
    if (!isProduction(c.environment)) {
      score -= 0.3;
      against.push(`it changed in ${c.environment}, not production`);
    }
    const where = c.environment ? ` in ${c.environment}` : '';
    // A kill switch turned off is undone by turning it back on.
    const turnedOff = /^(off|disabled|false|0)$/i.test(c.state ?? '');
    const tool = TOOL[c.provider] ?? c.provider;
    const target = c.service ?? v.service;
    out.push(
      draft('feature_flag', {
        statement: `Feature flag ${flag} flipped${where} at ${hhmm(c.occurredAt)} broke ${target}`,
        subject: flag,
        score,
        support,
        against,
        sources: [c.eventId],
        rootCause: `A feature flag change: ${flag} was ${turnedOff ? 'turned off' : 'changed'}${where} (${tool}${c.author ? `, by ${c.author}` : ''}) at ${hhmm(c.occurredAt)}, ${formatDuration(minutesBefore)} before ${target} started failing${mentioned ? `; the errors name ${flag}` : ''}. ${turnedOff ? 'Turning it off removed a protection or a code path production relies on.' : 'The code path it turned on fails in production.'}`,
        actions: [
          turnedOff
            ? `Turn feature flag ${flag} back on${where} in ${tool} (restore its previous state), then confirm ${target}'s errors stop`
            : `Turn off feature flag ${flag}${where} in ${tool} (restore its previous state), then confirm ${target}'s errors stop`,
          `Keep ${flag} off until the code path it enables is fixed and tested with a small rollout percentage`,
        ],
        keywords: ['feature flag', 'flag', 'toggle', 'rollout', lower(flag)],
        changeRef: c.eventId,
        evidence: mentioned ? 'direct' : 'temporal',
      }),
    );
  }
  return out;
}

/** "Bump pg from 8.11.3 to 9.0.0", "Update dependency ioredis to v5": the target is a version, not a word. */
const BUMP =
  /\b(?:bump|bumps|bumped|upgrade|update|updates)\s+(?:dependency\s+)?([@\w./-]+)\s+(?:from\s+(\S+)\s+)?to\s+v?(\d+(?:\.[\w-]+)*)/i;

interface Bump {
  library: string;
  from: string | null;
  to: string | null;
}

function bumpOf(c: ChangeObservation): Bump | null {
  const texts = [c.title, c.description ?? '', ...c.commits.map((m) => m.message)];
  for (const t of texts) {
    const m = t.match(BUMP);
    if (m)
      return {
        library: m[1]!.replace(/[`'"]/g, ''),
        from: m[2] ?? null,
        to: (m[3] ?? '').replace(/[`'",.]+$/, '') || null,
      };
  }
  return null;
}

/** The deployment of the same service after a change (what put it in production). */
function deployAfter(v: View, c: ChangeObservation): ChangeObservation | undefined {
  return v.input.changes
    .filter(
      (d) =>
        d.kind === 'deployment' &&
        d.changeType !== 'feature_flag' &&
        lower(d.service) === lower(c.service) &&
        ms(d.occurredAt) >= ms(c.occurredAt) - 60_000 &&
        ms(d.occurredAt) <= ms(v.first) + 5 * 60_000,
    )
    .sort((a, b) => ms(a.occurredAt) - ms(b.occurredAt))[0];
}

export function dependencyBump(v: View): Hypothesis[] {
  const out: Hypothesis[] = [];
  for (const c of v.input.changes) {
    if (c.hops > 0 || c.kind !== 'code_change') continue;
    const bump = bumpOf(c);
    if (c.changeType !== 'dependency' && !bump) continue;
    const deploy = deployAfter(v, c);
    const live = deploy ?? c;
    const minutesBefore = minutesBetween(live.occurredAt, v.first);
    const p = proximity(minutesBefore);
    if (p <= 0) continue;
    const library = bump?.library ?? 'a dependency';
    const mentioned = bump ? named(v, bump.library.split('/').pop()!) : false;
    let score = 0.4 + 0.3 * p + (deploy ? 0.1 : 0) + (mentioned ? 0.15 : 0);
    if (!deploy && c.changeType === 'dependency') score -= 0.05;
    const versions = bump?.from ? ` from ${bump.from} to ${bump.to}` : bump?.to ? ` to ${bump.to}` : '';
    const ref = sha7(c.sha) ?? c.title;
    const service = c.service ?? v.service;
    const support = [
      `${c.title} (${c.changeType === 'dependency' ? 'dependency update' : 'commit'}) ${formatDuration(minutesBetween(c.occurredAt, v.first))} before the first alert`,
    ];
    if (deploy) support.push(`shipped by the deployment at ${hhmm(deploy.occurredAt)}`);
    if (mentioned) support.push(`the errors name ${library}`);
    const failing = v.ownFiring[0];
    out.push(
      draft('dependency_bump', {
        statement: `The upgrade of ${library}${versions} in ${service} broke it`,
        subject: library,
        score,
        support,
        against: [],
        sources: [c.eventId, ...(deploy ? [deploy.eventId] : [])],
        rootCause: `A dependency upgrade: ${library}${versions} (${quote(c.title, 90)}${c.sha ? `, ${sha7(c.sha)}` : ''}) reached ${service} ${deploy ? `with the deployment at ${hhmm(deploy.occurredAt)}` : `at ${hhmm(c.occurredAt)}`}, ${formatDuration(minutesBefore)} before it started failing${failing ? ` (${alertLine(failing)})` : ''}.`,
        actions: [
          `Revert the upgrade of ${library}${bump?.from ? ` back to ${bump.from}` : ''} (${ref}) and redeploy ${service}${deploy ? `, or roll back the deployment at ${hhmm(deploy.occurredAt)}${deploy.sha ? ` (sha ${sha7(deploy.sha)})` : ''}` : ''}`,
          `Pin ${library} and read its changelog for the breaking change before upgrading again`,
        ],
        keywords: ['dependency', 'upgrade', 'bump', 'revert', 'rollback', lower(library)],
        changeRef: live.sha ?? live.eventId,
        evidence: mentioned ? 'direct' : 'temporal',
      }),
    );
  }
  return out;
}
