import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import type { InvokeSkillRequest } from '../../src/skills/types.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';

const env = useWorkerlessService();

describe('skillTestWorkflow', () => {
  it('answers a failure around the skill as internal_error, never with its message (a statement and its parameters)', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_pro' });
    let calls = 0;
    const worker = await startTestWorker(svc, connection, {
      invokeSkill: async (request: InvokeSkillRequest) => {
        calls++;
        throw new Error(
          `Failed query: select "id" from "incidents" where "tenant_id" = $1\nparams: ${request.tenantId},sk-secret-param`,
        );
      },
    });
    try {
      const invocationId = newId('ski');
      const outcome = await svc.workflows.testSkill({
        tenantId: tenant.tenantId,
        skillId: 'skl_builtin_search_incidents',
        input: { query: 'x' },
        invocationId,
      });
      expect(outcome).toEqual({
        invocationId,
        skillId: 'skl_builtin_search_incidents',
        durationMs: 0,
        ok: false,
        error: {
          code: 'internal_error',
          message: 'The skill could not be run because of an internal error; nothing was recorded',
        },
      });
      expect(JSON.stringify(outcome)).not.toMatch(/Failed query|sk-secret-param/);
      expect(calls).toBe(3); // retried as the workflow's policy says, then answered
    } finally {
      await worker.stop();
    }
  }, 60_000);
});
