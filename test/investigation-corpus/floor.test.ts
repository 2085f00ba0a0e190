/**
 * The investigation corpus (issue 37): every incident of ./incidents run against the real service
 * with the built-in analyzer, graded (ADR 0271), printed, and held above the floors below.
 * `npm run eval:investigation` runs this file; INVESTIGATION_EVAL_JSON=path writes the records,
 * INVESTIGATION_EVAL_VERBOSE=1 prints each miss, INVESTIGATION_EVAL_ONLY=id,id runs a few.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { FLOORS } from './floors.js';
import { figures } from './grade.js';
import { corpus } from './incidents/index.js';
import { exportRecords, formatReport } from './report.js';
import { runCorpus, type IncidentResult } from './run.js';
import { problems } from './well-formed.js';

describe('investigation corpus', () => {
  let svc: TestService;
  let results: IncidentResult[];

  beforeAll(async () => {
    svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('holds well-formed incidents', () => {
    expect(problems(corpus)).toEqual([]);
  });

  it('runs every incident and grades it', { timeout: 300_000 }, async () => {
    const only = process.env.INVESTIGATION_EVAL_ONLY?.split(',').map((s) => s.trim());
    const chosen = only ? corpus.filter((i) => only.includes(i.id)) : corpus;
    results = await runCorpus(svc, chosen, { concurrency: 4 });
    console.log(`\n${formatReport(results)}`);
    const file = exportRecords(results);
    if (file) console.log(`records written to ${file}`);
    expect(results).toHaveLength(chosen.length);
    expect(results.filter((r) => r.error).map((r) => `${r.id}: ${r.error}`)).toEqual([]);
  });

  it('stays above the floors', () => {
    if (process.env.INVESTIGATION_EVAL_ONLY) return;
    const f = figures(results);
    expect(f.rootCauseAccuracy, 'root-cause accuracy').toBeGreaterThanOrEqual(FLOORS.rootCauseAccuracy);
    expect(f.firstActionAccuracy, 'first-action accuracy').toBeGreaterThanOrEqual(FLOORS.firstActionAccuracy);
    expect(f.brier, 'Brier score').toBeLessThanOrEqual(FLOORS.maxBrier);
  });
});
