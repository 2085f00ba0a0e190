/**
 * Determinism of the incident workflow's merge: a recorded history of an incident merged into
 * another while its approval waited (the mergeInto update, the merge activity, the approval
 * withdrawn, the run ended) replays with the current code, and so does one made just now.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { investigateToPendingApproval } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';

const recordedMergeHistory = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'histories',
  'incident-merge-v1.json',
);

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
});
afterAll(() => svc?.stop());

/** An incident awaiting its approval, merged into a manual incident; the merged one's history. */
async function mergedWhileAwaitingApproval() {
  const survivor = await svc.api('POST', '/v1/incidents/chat', {
    token: tenant.member,
    body: { title: 'Survivor', description: 'the incident the other one is merged into' },
  });
  expect(survivor.status).toBe(201);
  const { incidentId } = await investigateToPendingApproval(svc, tenant);
  const merged = await svc.api('POST', `/v1/incidents/${survivor.body.incidentId}/merge`, {
    token: tenant.member,
    body: { incidentId },
  });
  expect(merged.status).toBe(200);
  const handle = svc.client.workflow.getHandle(incidentId);
  await handle.result();
  return handle.fetchHistory();
}

describe('incident workflow determinism with merges', () => {
  it('replays the recorded history of an incident merged while its approval waited', async () => {
    if (process.env.RECORD_HISTORIES) {
      writeFileSync(recordedMergeHistory, historyToJSON(await mergedWhileAwaitingApproval()));
    }
    // A missing fixture fails: recording it here and replaying it at once would prove nothing.
    expect(existsSync(recordedMergeHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedMergeHistory, 'utf8'));
    const text = JSON.stringify(history);
    for (const name of ['mergeInto', 'mergeIncident', 'proposeRemediation', 'expireApproval'])
      expect(text).toContain(name);
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-merge',
    );
  });

  it('replays a merge history made just now', async () => {
    const history = await mergedWhileAwaitingApproval();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, 'merge-now');
  });
});
