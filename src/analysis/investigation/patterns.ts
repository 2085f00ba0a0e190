/** Learned patterns: support for a hypothesis the signals raised, or a hypothesis of their own. */
import { clamp, distinctiveWords, quote, round2 } from './text.js';
import { type Hypothesis, type PatternObservation } from './types.js';
import { draft, type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Learned patterns

/** How much a matching pattern adds to the signal-based hypothesis of its category. */
export const PATTERN_SUPPORT = { stable: 0.25, emerging: 0.1 } as const;

/** The score of a pattern standing on its own: strong when stable, weak when emerging. */
export function knownPatternScore(p: Pick<PatternObservation, 'status' | 'confidence'>): number {
  return round2(p.status === 'stable' ? 0.5 + 0.4 * p.confidence : 0.2 + 0.3 * p.confidence);
}

const describePattern = (p: PatternObservation) =>
  `learned ${p.status} pattern '${p.title}' (${p.occurrences} earlier incident(s), confidence ${round2(p.confidence)})`;

/**
 * Learned patterns matching the incident's symptoms. A pattern whose category is a hypothesis
 * the signals already raised supports it (+0.25 when stable, +0.1 when emerging), and a stable
 * pattern's past fix then leads that hypothesis' actions. Otherwise the pattern is a hypothesis
 * of its own (`known_pattern`, citing the pattern): 0.5 + 0.4 × confidence when stable, 0.2 +
 * 0.3 × confidence when emerging, with the fix as its actions. At most three patterns count.
 */
export function applyKnownPatterns(v: View, found: PatternObservation[], existing: Hypothesis[]): Hypothesis[] {
  const added: Hypothesis[] = [];
  for (const p of found.slice(0, 3)) {
    const same = existing.filter((h) => h.kind === p.category).sort((a, b) => b.score - a.score)[0];
    if (same) {
      same.score = round2(clamp(same.score + PATTERN_SUPPORT[p.status], 0, 0.95));
      same.support.push(`the ${describePattern(p)} names the same cause`);
      same.sources.push(p.patternId);
      if (p.status === 'stable' && p.fix.length > 0) {
        same.actions = [...new Set([...p.fix, ...same.actions])];
        same.fixFirst = true;
      }
      continue;
    }
    const stable = p.status === 'stable';
    added.push(
      draft('known_pattern', {
        statement: `${v.service} shows the symptoms of the ${describePattern(p)}`,
        subject: p.title,
        score: knownPatternScore(p),
        support: [
          `the ${describePattern(p)} matches the service${p.overlap > 0 && p.overlap !== 0.5 ? ` and ${p.overlap >= 1 ? 'every' : 'some'} alert name(s)` : ''}: ${quote(p.rootCause, 160)}`,
          ...(p.fix.length > 0 ? [`it was resolved before by: ${quote(p.fix[0]!, 120)}`] : []),
        ],
        against: stable ? [] : ['the pattern is still emerging: seen few times or with mixed feedback'],
        sources: [p.patternId],
        rootCause: `A known failure pattern: ${v.service} matches the ${describePattern(p)}. Its root cause then: ${quote(p.rootCause, 600)}`,
        actions:
          p.fix.length > 0
            ? p.fix.slice(0, 5)
            : [`Check whether the cause of '${p.title}' applies again: ${quote(p.rootCause, 160)}`],
        keywords: [...distinctiveWords(`${p.title} ${p.rootCause}`)].slice(0, 8),
      }),
    );
  }
  return added;
}
