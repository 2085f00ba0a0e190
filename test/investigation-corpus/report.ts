/** The eval's printout and its JSON records (for fitting the engine's confidence). */
import { writeFileSync } from 'node:fs';
import { figures, outcome, type Figures } from './grade.js';
import type { IncidentResult } from './run.js';
import { incidentClasses } from './types.js';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const pad = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s.padEnd(n));

export function corpusFigures(results: IncidentResult[]): Figures {
  return figures(results);
}

export function formatReport(results: IncidentResult[]): string {
  const lines: string[] = [];
  lines.push(`${pad('incident', 44)} ${pad('class', 12)} ${pad('grade', 28)} conf  action  top hypothesis`);
  for (const r of results) {
    lines.push(
      `${pad(r.id, 44)} ${pad(r.class, 12)} ${pad(r.grade, 28)} ${r.confidence.toFixed(2)}  ${r.firstActionCorrect ? 'yes' : 'no '}     ${r.topHypothesis ?? '-'}`,
    );
  }
  const f = figures(results);
  lines.push('');
  lines.push(`incidents: ${f.n}`);
  lines.push(`root-cause accuracy (bullseye): ${pct(f.rootCauseAccuracy)}`);
  lines.push(`first-action accuracy:          ${pct(f.firstActionAccuracy)}`);
  lines.push(`Brier score:                    ${f.brier.toFixed(3)}`);
  lines.push('');
  lines.push('by class         n  bullseye  action');
  for (const c of incidentClasses) {
    const rows = results.filter((r) => r.class === c);
    if (!rows.length) continue;
    const cf = figures(rows);
    lines.push(
      `${pad(c, 14)} ${String(rows.length).padStart(3)}  ${pct(cf.rootCauseAccuracy).padStart(8)}  ${pct(cf.firstActionAccuracy).padStart(6)}`,
    );
  }
  lines.push('');
  lines.push(
    'grades: ' +
      ['bullseye', 'one hop short', 'right area, wrong diagnosis', 'wrong area', 'no incident']
        .map((g) => `${g} ${results.filter((r) => r.grade === g).length}`)
        .join(', '),
  );
  lines.push('');
  lines.push('reliability   n  mean conf  named cause right');
  for (const b of f.reliability)
    lines.push(
      `${b.bin.padEnd(10)} ${String(b.count).padStart(4)}  ${b.count ? b.meanConfidence.toFixed(2).padStart(9) : '        -'}  ${b.count ? pct(b.accuracy).padStart(8) : '       -'}`,
    );
  const refused = results.flatMap((r) => r.refused);
  if (refused.length) {
    lines.push('');
    lines.push(`deliveries refused (${refused.length}):`);
    for (const x of refused)
      lines.push(
        `  ${x.incident}: ${x.provider}${x.event ? `/${x.event}` : ''} ${x.status}${x.page ? ' (the page)' : ''} ${x.message.slice(0, 140)}`,
      );
  }
  const joined = results.filter((r) => r.pageJoined);
  if (joined.length) {
    lines.push('');
    lines.push(`pages that joined an earlier incident (grouping) (${joined.length}):`);
    for (const r of joined) lines.push(`  ${r.id}: joined the incident of ${r.pageJoined}`);
  }
  const errors = results.filter((r) => r.error);
  for (const e of errors) lines.push(`error in ${e.id}: ${e.error}`);
  const noRepos = results.filter((r) => r.repositoriesAccepted === false).length;
  if (noRepos) lines.push(`nodes' repositories refused by the api in ${noRepos} incidents (sent without them)`);
  if (process.env.INVESTIGATION_EVAL_VERBOSE)
    for (const r of results.filter(
      (x) => process.env.INVESTIGATION_EVAL_VERBOSE === 'all' || !x.correct || !x.firstActionCorrect,
    ))
      lines.push(`\n### ${r.id} (${r.grade}, ${r.confidence})\n${r.statement}\n→ ${r.firstAction}`);
  return lines.join('\n');
}

/** Writes the per-incident records to `INVESTIGATION_EVAL_JSON` when it is set. */
export function exportRecords(results: IncidentResult[]): string | undefined {
  const file = process.env.INVESTIGATION_EVAL_JSON;
  if (!file) return undefined;
  const records = results.map((r) => ({
    id: r.id,
    class: r.class,
    grade: r.grade,
    correct: r.correct,
    undetermined: r.undetermined,
    /** The calibration outcome: the named cause is the cause (never on an undetermined incident). */
    causeRight: outcome(r),
    firstActionCorrect: r.firstActionCorrect,
    confidence: r.confidence,
    topHypothesis: r.topHypothesis,
    hypotheses: r.hypotheses,
    rootCause: r.rootCause,
    firstAction: r.firstAction,
  }));
  writeFileSync(file, JSON.stringify({ figures: figures(results), records }, null, 2));
  return file;
}
