/**
 * Reading a chat question without a model: its content keywords, the period it names, what it
 * asks for (a count, a cause, a fix, a runbook, a pattern, evidence, or anything), and whether it
 * follows up on the previous turn. Pure functions; retrieval (./retrieval.ts) does the lookups.
 */
import type { ChatSourceType } from '../analysis/types.js';
import { severities, type Severity } from '../db/schema/incidents.js';
import { dedupeByGroup, normalizeQuestion } from './synonyms.js';

export type IntentKind = 'count' | 'list' | 'cause' | 'fix' | 'runbook' | 'pattern' | 'evidence' | 'search';

export interface Period {
  /** As the question said it: "this month", "last 7 days", "in March". */
  label: string;
  from: Date;
  /** Exclusive. */
  to: Date;
}

export interface QuestionAnalysis {
  kind: IntentKind;
  /** For `cause`: the question asks for the most recent one ("the last outage"). */
  latest: boolean;
  /** Content keywords, lowercased, deduplicated, in order; question and meta words removed. */
  terms: string[];
  /** The kinds of record the question names ("which runbook…" → runbook). */
  typeHints: ChatSourceType[];
  period: Period | null;
  /** "critical incidents": the severity named next to incidents. */
  severity: Severity | null;
  /** Refers back to the conversation ("it", "that", "and last month?") rather than naming a subject. */
  refersBack: boolean;
  /** Starts like a continuation ("and …", "what about …"). */
  continues: boolean;
}

/** At most this many keywords go into a search. */
export const MAX_TERMS = 12;

/**
 * Words that say how a question is asked or what kind of record it wants, not what it is about.
 * PostgreSQL's english configuration drops its own stop words; these are dropped before that so
 * "what caused the last incident" does not rank records by the word "incident".
 */
const NOISE = new Set(
  `a an the and or but of in on at to for from by with about as into over after before during since until than then so also
  again any all some each every ever more most less least very just only still yet not no yes
  what which who whom whose when where why how many much did does do done doing was were is are be been being am
  have has had having can could should would will shall may might must
  we our ours us you your yours i me my mine it its they them their theirs he she his her this that these those there here
  whats thats theres hows wheres whos anything something everything going new story
  tell show give list find explain describe know please thanks thank hi hello ok okay cover covers covered covering up help need needs want
  latest last recent recently lately previous previously first newest oldest current currently earlier
  happen happens happened happening occur occurs occurred occurring go went get got see saw
  time times day days week weeks month months year years today yesterday ago past ever
  incident incidents issue issues problem problems
  cause caused causes causing reason reasons root why
  fix fixed fixes fixing resolve resolved resolves resolving solve solved solves mitigate mitigated remediate remediated
  handle handled handles deal dealt recover recovered address addressed
  runbook runbooks playbook playbooks procedure procedures steps step
  pattern patterns seen before known recurring recur recurs signature
  evidence investigation investigations findings finding
  count number often frequently total times
  january february march april may june july august september october november december
  jan feb mar apr jun jul aug sep sept oct nov dec`
    .split(/\s+/)
    .filter(Boolean),
);

/** The noise words, for the typo correction (a misspelt "waht" is still noise). */
export const noiseWords = (): string[] => [...NOISE];

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

const DAY_MS = 86_400_000;
const startOfDay = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
const startOfMonth = (year: number, month: number) => new Date(Date.UTC(year, month, 1));
/** Monday 00:00 UTC of the week `d` falls in. */
const startOfWeek = (d: Date) => new Date(startOfDay(d).getTime() - ((d.getUTCDay() + 6) % 7) * DAY_MS);

/**
 * The period a question names, in UTC calendar terms (the usage periods are UTC months too), and
 * the text without it. "this month" ends now; a named month is the most recent one not in the
 * future.
 */
export function findPeriod(text: string, now: Date): { period: Period | null; rest: string } {
  const lower = text.toLowerCase();
  const rules: Array<[RegExp, (m: RegExpMatchArray) => Period]> = [
    [
      /\b(?:in the |over the |during the )?(?:last|past|previous) (\d{1,2} )?hours?\b/,
      (m) => {
        const hours = Number(m[1] ?? 1);
        return {
          label: `last ${hours} hour${hours === 1 ? '' : 's'}`,
          from: new Date(now.getTime() - hours * 3_600_000),
          to: now,
        };
      },
    ],
    [
      /\b(?:in the |over the |during the )?(?:last|past|previous) (\d{1,3}) days?\b/,
      (m) => ({ label: `last ${m[1]} days`, from: new Date(now.getTime() - Number(m[1]) * DAY_MS), to: now }),
    ],
    [
      /\b(?:in the |over the |during the )?(?:last|past|previous) (\d{1,2}) weeks?\b/,
      (m) => ({ label: `last ${m[1]} weeks`, from: new Date(now.getTime() - Number(m[1]) * 7 * DAY_MS), to: now }),
    ],
    [
      /\b(?:in the |over the |during the )?(?:last|past|previous) (\d{1,2}) months?\b/,
      (m) => ({
        label: `last ${m[1]} months`,
        from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - Number(m[1]), now.getUTCDate())),
        to: now,
      }),
    ],
    [
      /\b(?:so far )?this month\b/,
      () => ({ label: 'this month', from: startOfMonth(now.getUTCFullYear(), now.getUTCMonth()), to: now }),
    ],
    [
      /\b(?:last|previous|past) month\b/,
      () => ({
        label: 'last month',
        from: startOfMonth(now.getUTCFullYear(), now.getUTCMonth() - 1),
        to: startOfMonth(now.getUTCFullYear(), now.getUTCMonth()),
      }),
    ],
    [/\bthis week\b/, () => ({ label: 'this week', from: startOfWeek(now), to: now })],
    [
      /\b(?:last|previous|past) week\b/,
      () => ({ label: 'last week', from: new Date(startOfWeek(now).getTime() - 7 * DAY_MS), to: startOfWeek(now) }),
    ],
    [/\btoday\b/, () => ({ label: 'today', from: startOfDay(now), to: now })],
    [
      /\byesterday\b/,
      () => ({ label: 'yesterday', from: new Date(startOfDay(now).getTime() - DAY_MS), to: startOfDay(now) }),
    ],
    [/\bthis year\b/, () => ({ label: 'this year', from: new Date(Date.UTC(now.getUTCFullYear(), 0, 1)), to: now })],
    [
      /\b(?:last|previous|past) year\b/,
      () => ({
        label: 'last year',
        from: new Date(Date.UTC(now.getUTCFullYear() - 1, 0, 1)),
        to: new Date(Date.UTC(now.getUTCFullYear(), 0, 1)),
      }),
    ],
    [
      new RegExp(`\\b(?:in|during|for|since) (${MONTHS.join('|')})\\b`),
      (m) => {
        const month = MONTHS.indexOf(m[1]!);
        const year = month <= now.getUTCMonth() ? now.getUTCFullYear() : now.getUTCFullYear() - 1;
        const from = startOfMonth(year, month);
        const end = startOfMonth(year, month + 1);
        return {
          label: `in ${m[1]!.charAt(0).toUpperCase()}${m[1]!.slice(1)} ${year}`,
          from,
          to: end < now ? end : now,
        };
      },
    ],
  ];
  for (const [pattern, make] of rules) {
    const match = lower.match(pattern);
    if (match)
      return {
        period: make(match),
        rest: `${lower.slice(0, match.index)} ${lower.slice(match.index! + match[0].length)}`,
      };
  }
  return { period: null, rest: lower };
}

/**
 * Content keywords: words of letters and digits, joined by `-`, `_` or `.` inside a word
 * (service names such as `payments-db` stay whole), without noise words, pure numbers shorter
 * than 3 digits, or single letters.
 */
export function extractTerms(text: string): string[] {
  const words = text.toLowerCase().match(/[a-z0-9]+(?:[-_.][a-z0-9]+)*/g) ?? [];
  const terms: string[] = [];
  for (const word of words) {
    if (word.length < 2 || NOISE.has(word) || /^\d{1,2}$/.test(word)) continue;
    if (!terms.includes(word)) terms.push(word);
    if (terms.length === MAX_TERMS) break;
  }
  return terms;
}

const has = (text: string, pattern: RegExp) => pattern.test(text);

/**
 * A broad question about a subject ("what happened with the payments database?", "payments db
 * issues?", "anything on the notification worker?"): its answer is every matching incident.
 */
export function isBroad(text: string): boolean {
  // "known issues", "runbooks for …" ask for patterns and runbooks, not incidents.
  if (has(text, /\b(runbooks?|playbooks?|patterns?|known|recurring)\b/)) return false;
  return (
    has(
      text,
      /\bwhats? (?:has |have )?(?:been )?(?:happened|happening|going on|went on|up|wrong|the story|the deal) (?:with|to|on|at|in|for)\b/,
    ) ||
    has(text, /^(?:did|have|do) we (?:have|had|get|got|see|seen) any\b/) ||
    has(text, /\b(?:everything|all) (?:about|on|for|with)\b/) ||
    has(text, /^(?:anything|any news|news|any updates?) (?:on|about|with|for|from|in)\b/) ||
    has(text, /^(?:incidents|outages|issues|problems) (?:on|for|with|in|about|involving|of)\b/) ||
    has(text, /^(?:[\w.-]+ ){1,5}(?:incidents|outages|issues|problems)\s*\??$/) ||
    has(text, /\b(?:incidents|outages|issues|problems) (?:that )?(?:we )?(?:had|have had|saw|got|hit)\b/)
  );
}

/** Reads one question. `now` anchors relative periods. */
export function analyzeQuestion(message: string, now: Date): QuestionAnalysis {
  const { period, rest: periodRest } = findPeriod(message, now);
  // Shorthand and phrases read as the table says ("w/" → with, "out of memory" → oom).
  const withoutPeriod = normalizeQuestion(periodRest);
  const text = normalizeQuestion(message);
  const severityMatch = withoutPeriod.match(
    new RegExp(`\\b(${severities.join('|')})(?:[- ]severity|[- ]priority)? (?:incidents?|outages?)\\b`),
  );
  const severity = (severityMatch?.[1] as Severity | undefined) ?? null;
  const rest = severityMatch ? withoutPeriod.replace(severityMatch[0], ' ') : withoutPeriod;
  const terms = dedupeByGroup(extractTerms(rest));

  let kind: IntentKind = 'search';
  const typeHints: ChatSourceType[] = [];
  if (has(text, /\b(how many|number of|how often|how frequently|count of|count the)\b/)) {
    kind = 'count';
    typeHints.push('incident');
  } else if (
    has(text, /^(which|what|list|show(?: me)?|any|all)\b(?: \S+){0,2} (incidents|outages)\b/) ||
    has(text, /\b(list|show me) (the |all )?(\S+ )?(incidents|outages)\b/) ||
    isBroad(text)
  ) {
    kind = 'list';
    typeHints.push('incident');
  } else if (
    has(text, /\b(runbooks?|playbooks?|procedures?)\b/) ||
    has(
      text,
      /\bhow (do|should|can|would) (we|i|you|one) (fix|handle|resolve|mitigate|deal with|recover|remediate|fail ?over|roll ?back|restart|renew|rotate|drain|promote|rebuild|purge)\b/,
    )
  ) {
    kind = 'runbook';
    typeHints.push('runbook');
  } else if (
    has(text, /\b(patterns?|recurring|recurs?|known (issue|failure|problem)|signature)\b/) ||
    has(text, /\b(seen|had|happened|occurred|hit)\b.*\b(before|again|previously)\b/)
  ) {
    kind = 'pattern';
    typeHints.push('pattern');
  } else if (
    has(text, /\b(evidence|logs?|log lines?|metrics?|signals?|what (did|do) (the )?[\w-]+ (show|say)|stack ?traces?)\b/)
  ) {
    kind = 'evidence';
    typeHints.push('evidence');
  } else if (
    has(
      text,
      /\bhow (was|were|did|is|are|has|have) .*\b(fix|fixed|resolved?|mitigated?|solved?|remediated?|recovered|handled)\b/,
    ) ||
    has(text, /\b(what|which) (fixed|resolved|mitigated|solved)\b/) ||
    has(text, /\b(what|which) (actions?|steps?|remediation)\b/) ||
    has(text, /\b(how to|how do i|how do we) (fix|resolve|mitigate)\b/)
  ) {
    kind = 'fix';
    typeHints.push('investigation', 'runbook', 'pattern');
  } else if (
    has(text, /\b(caused?|causing|root cause|reason|why (did|was|were|is|are|do|does))\b/) ||
    has(text, /\bwhat (went wrong|happened|broke)\b/)
  ) {
    kind = 'cause';
    typeHints.push('incident', 'investigation');
  }
  const latest = has(text, /\b(last|latest|most recent|recent|newest|previous|current|new)\b/);
  const refersBack = has(text, /\b(it|its|that|this|they|them|those|these|the same|there|then)\b/) && terms.length <= 2;
  const continues = has(text, /^(and|also|so|then|ok(ay)?,?|what about|how about|and what about)\b/);
  return { kind, latest, terms, typeHints, period, severity, refersBack, continues };
}

/**
 * A follow-up keeps the previous question's subject when it names none of its own ("and how was
 * it fixed?") and its kind and period when it only changes one of them ("and last month?").
 */
export function withConversation(
  current: QuestionAnalysis,
  previous: QuestionAnalysis | null,
): QuestionAnalysis & { inheritsSubject: boolean } {
  if (!previous) return { ...current, inheritsSubject: false };
  const inheritsSubject =
    current.terms.length === 0 ||
    current.refersBack ||
    (current.continues && current.kind === 'search' && current.terms.length === 0);
  const inheritsKind =
    current.kind === 'search' && (current.continues || current.terms.length === 0 || current.refersBack);
  const kind = inheritsKind ? previous.kind : current.kind;
  const terms = inheritsSubject ? [...new Set([...current.terms, ...previous.terms])].slice(0, 12) : current.terms;
  return {
    ...current,
    kind,
    latest: current.latest || (inheritsKind && previous.latest),
    terms,
    typeHints: inheritsKind ? previous.typeHints : current.typeHints,
    period: current.period ?? (inheritsKind || inheritsSubject ? previous.period : null),
    severity: current.severity ?? (inheritsKind ? previous.severity : null),
    inheritsSubject,
  };
}
