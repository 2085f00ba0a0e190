/**
 * An incident's own alerts are read in time order (triage, investigation scene, pattern
 * symptoms) through an index on (incident_id, kind, occurred_at, id), never by walking the
 * tenant's other alerts: a tenant in an alert storm has thousands of events in other incidents.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { incidentSymptoms } from '../../src/db/repositories/patterns.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { createTestDatabase } from '../helpers/service.js';

let database: Database;
let tenantId: string;
const OTHER_ALERTS = 3_000;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 2 });
  tenantId = (await createTenant(database.db, { name: 'Index tests', plan: 'plan_pro' })).id;
  await database.db.insert(incidents).values([
    { id: 'inc_idx_small', tenantId, title: 'small', description: 'd', severity: 'high', status: 'open', source: 'automated', service: 'checkout' },
    { id: 'inc_idx_storm', tenantId, title: 'storm', description: 'd', severity: 'high', status: 'open', source: 'automated', service: 'search' },
  ]);
  // The storm's alerts span the same hour as the small incident's, so a walk of the tenant's
  // alerts in time order would pass them all. Inserted without ANALYZE afterwards, as a storm
  // outruns autovacuum.
  await database.sql`
    insert into ingested_events (id, tenant_id, provider, kind, status, fingerprint, alert_name, service, title, description, raw, occurred_at, incident_id)
    select 'evt_idx_storm_' || g, ${tenantId}, 'generic', 'alert', 'firing', 'fp-storm', 'SearchLatency', 'search', 'Search latency', 'd', '{}',
           timestamptz '2026-11-01 10:00:00+00' + g * interval '1 second', 'inc_idx_storm'
    from generate_series(1, ${OTHER_ALERTS}) g`;
  await database.sql`
    insert into ingested_events (id, tenant_id, provider, kind, status, fingerprint, alert_name, service, title, description, labels, raw, occurred_at, incident_id)
    select 'evt_idx_small_' || g, ${tenantId}, 'generic', 'alert', 'firing', 'fp-small', 'CheckoutErrors', 'checkout', 'Checkout errors', 'd',
           '{"region":"eu-west-1"}', '{}', timestamptz '2026-11-01 10:00:00+00' + g * interval '10 minutes', 'inc_idx_small'
    from generate_series(1, 5) g`;
});
afterAll(() => database?.close());

async function planOfOwnAlerts(): Promise<PlanNode[]> {
  const [row] = await database.sql.unsafe(
    `explain (analyze, format json)
     select * from ingested_events
     where tenant_id = $1 and incident_id = $2 and kind = 'alert'
     order by occurred_at asc, id asc limit 50`,
    [tenantId, 'inc_idx_small'],
  );
  return nodes((row!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan);
}

describe("an incident's own alerts", () => {
  it('are read through the incident index, in order, touching none of the other incidents\' rows, with stale and fresh statistics', async () => {
    for (const stats of ['stale', 'analyzed']) {
      if (stats === 'analyzed') await database.sql`analyze ingested_events`;
      const plan = await planOfOwnAlerts();
      const scans = plan.filter((n) => n['Index Name']);
      expect(scans.map((n) => n['Index Name']), stats).toEqual(['ingested_events_incident_kind_idx']);
      expect(plan.some((n) => /Sort/.test(n['Node Type'])), stats).toBe(false);
      expect(plan.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0), 0), stats).toBe(0);
    }
  });

  it('give the pattern symptoms of that incident only', async () => {
    const symptoms = await incidentSymptoms(database.db, tenantId, 'inc_idx_small');
    expect(symptoms).toMatchObject({ service: 'checkout', labels: { region: 'eu-west-1' } });
    expect(symptoms!.alertNames).toEqual(['CheckoutErrors']);
  });
});
