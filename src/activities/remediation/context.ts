import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { remediationSteps } from '../../db/schema/remediation.js';
import type { SkillInvoker } from '../../skills/invoke.js';

/** What every remediation activity works with, built once by `createRemediationActivities`. */
export interface RemediationContext {
  db: Db;
  clock: () => Date;
  /** Runs a step's tenant skill. */
  invoker: SkillInvoker;
}

/** A transaction of the database, as `db.transaction` hands it to its callback. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/**
 * The steps that will never run once a remediation ends unexecuted (rejected, expired) or stops
 * at a failed step: `skipped`, not `pending`, so the plan does not read as still to come.
 */
export async function skipPendingSteps(tx: Pick<Db, 'update'>, tenantId: string, remediationId: string): Promise<void> {
  await tx
    .update(remediationSteps)
    .set({ status: 'skipped' })
    .where(
      and(
        eq(remediationSteps.remediationId, remediationId),
        eq(remediationSteps.tenantId, tenantId),
        eq(remediationSteps.status, 'pending'),
      ),
    );
}
