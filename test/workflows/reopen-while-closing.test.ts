/**
 * An incident closed while its investigation concludes, and reopened before the run has ended:
 * the conclusion's remediation request must survive the run continuing as new.
 */
import { NativeConnection } from '@temporalio/worker';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SynthesisRequest } from '../../src/analysis/investigation-types.js';
import { approvals } from '../../src/db/schema/remediation.js';
import type { RunningDevServer } from '../../src/temporal/dev-server.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { checkoutIncident, tenantWithApprovalTimeout } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';
import { startContinueAsNewServer, startTestWorker } from '../helpers/workers.js';

// A Temporal server of its own that suggests continuing as new after a few history events, and a
// service with no worker of its own: the test's worker holds the synthesis.
let server: RunningDevServer;
let svc: TestService;
let connection: NativeConnection;

beforeAll(async () => {
  server = await startContinueAsNewServer();
  svc = await startTestService({ temporalAddress: server.address, withoutWorker: true, withoutDispatcher: true });
  connection = await NativeConnection.connect({ address: server.address });
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await svc?.stop();
  await server?.stop();
});

describe('an incident reopened while its close drains', () => {
  it('proposes the remediation its investigation concluded, though the run continues as new', async () => {
    const tenant = await tenantWithApprovalTimeout(svc, 10);
    let release: (() => void) | undefined;
    const worker = await startTestWorker(svc, connection, (real) => ({
      synthesizeInvestigation: async (req: SynthesisRequest) => {
        if (!release) await new Promise<void>((r) => (release = r));
        return real.synthesizeInvestigation(req);
      },
    }));
    try {
      const incidentId = await checkoutIncident(svc, tenant.member);
      const handle = svc.client.workflow.getHandle(incidentId);
      expect((await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId } })).status).toBe(
        202,
      );
      await eventually(async () => release !== undefined, 30_000); // the synthesis is held
      const firstRun = (await handle.describe()).runId;

      // Closed while the investigation concludes, then reopened before the run has ended.
      const closed = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
        token: tenant.admin,
        body: { status: 'closed' },
      });
      expect(closed.body.status).toBe('closed');
      const reopened = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
        token: tenant.admin,
        body: { status: 'investigating' },
      });
      expect(reopened.body.status).toBe('investigating');
      expect((await handle.describe()).runId).toBe(firstRun); // the same run: it was still draining

      // The conclusion lands; its remediation is proposed, not dropped by the continue-as-new.
      release!();
      const approval = await eventually(async () => {
        const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
        return row?.status === 'pending' ? row : undefined;
      }, 60_000);
      // The workflow waits on it and has moved the incident (the row is written first).
      const state = await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.pendingApprovalId === approval.id && s.status === 'awaiting_approval' ? s : undefined;
      }, 30_000);
      expect(state).toMatchObject({
        pendingApprovalId: approval.id,
        status: 'awaiting_approval',
        remediationStatus: 'awaiting_approval',
      });
      const history = await handle.fetchHistory();
      expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    } finally {
      release?.();
      await worker.stop();
    }
  }, 180_000);
});
