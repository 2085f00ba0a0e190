/**
 * An activity that fails on a statement: its parameters (here a signing secret) reach neither the
 * workflow's history, nor the `triage.failed` event users read, nor the api's answer
 * (decision 225). The statement itself is a real one, refused by the real database.
 */
import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { apiKeys } from '../../src/db/schema/ingestion.js';
import { events } from '../../src/db/schema/events.js';
import { newId } from '../../src/ids.js';
import { checkoutIncident } from '../helpers/remediation.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';

const env = useWorkerlessService();

describe('an activity failing on a statement', () => {
  it('reports the statement without its parameters', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const secret = `whsec_canary_${randomBytes(8).toString('hex')}`;
    let calls = 0;
    const worker = await startTestWorker(svc, connection, {
      // A key for a tenant that does not exist: the foreign key refuses it.
      triageIncident: async () => {
        calls++;
        await svc.database.db.insert(apiKeys).values({
          id: newId('key'),
          tenantId: 'ten_missing',
          name: 'canary',
          keyHash: randomBytes(16).toString('hex'),
          prefix: 'flo_canary',
          signingSecret: secret,
        });
      },
    });
    try {
      const incidentId = await checkoutIncident(svc, tenant.member);
      const res = await svc.api('POST', `/v1/triage/${incidentId}`, { token: tenant.member });
      // Triage that fails is a 503 with its reason, as when the model cannot be reached.
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        error: 'service_unavailable',
        message: expect.stringMatching(/^Triage failed: Failed query: insert into "api_keys" .*default\)$/),
      });
      expect(calls).toBe(3); // the workflow's retry policy ran its course on the real failure
      expect(JSON.stringify(res.body)).not.toContain(secret);

      const [failed] = await svc.database.db
        .select()
        .from(events)
        .where(
          and(
            eq(events.tenantId, tenant.tenantId),
            eq(events.incidentId, incidentId),
            eq(events.type, 'triage.failed'),
          ),
        );
      expect(failed?.payload).toMatchObject({
        incidentId,
        reason: expect.stringContaining('Failed query: insert into "api_keys"'),
      });
      expect(JSON.stringify(failed?.payload)).not.toContain(secret);

      const history = JSON.stringify(await svc.client.workflow.getHandle(incidentId).fetchHistory());
      expect(history).toContain('Failed query: insert into \\"api_keys\\"');
      expect(history).toContain('violates foreign key constraint'); // the driver's error, kept as the cause
      expect(history).not.toContain(secret);
      expect(history).not.toContain('params:');
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
