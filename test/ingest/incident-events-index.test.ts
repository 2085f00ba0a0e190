/**
 * Reads of ingested events that must stay bounded in an alert storm. An incident's own alerts
 * are read in time order (triage, investigation scene, pattern symptoms) through an index on
 * (incident_id, kind, occurred_at, id), never by walking the tenant's other alerts; the alerts
 * correlated with an incident are the nearest in time, found without reading the whole window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { latestIncidentAlerts, nearestOtherAlerts } from '../../src/db/repositories/ingested-events.js';
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
    {
      id: 'inc_idx_small',
      tenantId,
      title: 'small',
      description: 'd',
      severity: 'high',
      status: 'open',
      source: 'automated',
      service: 'checkout',
    },
    {
      id: 'inc_idx_storm',
      tenantId,
      title: 'storm',
      description: 'd',
      severity: 'high',
      status: 'open',
      source: 'automated',
      service: 'search',
    },
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
  it("are read through the incident index, in order, touching none of the other incidents' rows, with stale and fresh statistics", async () => {
    for (const stats of ['stale', 'analyzed']) {
      if (stats === 'analyzed') await database.sql`analyze ingested_events`;
      const plan = await planOfOwnAlerts();
      const scans = plan.filter((n) => n['Index Name']);
      expect(
        scans.map((n) => n['Index Name']),
        stats,
      ).toEqual(['ingested_events_incident_kind_idx']);
      expect(
        plan.some((n) => /Sort/.test(n['Node Type'])),
        stats,
      ).toBe(false);
      expect(
        plan.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0), 0),
        stats,
      ).toBe(0);
    }
  });

  it("latest (triage's read) are the newest by occurrence, read backward through the incident index without sorting the storm", async () => {
    const query = latestIncidentAlerts(database.db, { tenantId, incidentId: 'inc_idx_storm', limit: 50 });
    const { sql: text, params } = query.toSQL();
    for (const stats of ['stale', 'analyzed']) {
      if (stats === 'analyzed') await database.sql`analyze ingested_events`;
      const [row] = await database.sql.unsafe(`explain (analyze, format json) ${text}`, params as string[]);
      const plan = nodes(
        (row!['QUERY PLAN'] as Array<{ Plan: PlanNode & { 'Actual Rows'?: number } }>)[0]!.Plan,
      ) as Array<PlanNode & { 'Actual Rows'?: number }>;
      const scans = plan.filter((n) => n['Index Name']);
      expect(
        scans.map((n) => n['Index Name']),
        stats,
      ).toEqual(['ingested_events_incident_kind_idx']);
      expect(scans[0]!['Actual Rows'], stats).toBe(50); // of the incident's 3,000
      expect(
        plan.some((n) => /Sort/.test(n['Node Type'])),
        stats,
      ).toBe(false);
    }
    const rows = await query;
    expect(rows.map((r) => r.id)).toEqual(Array.from({ length: 50 }, (_, i) => `evt_idx_storm_${OTHER_ALERTS - i}`));
    expect(rows.every((r) => r.incidentId === 'inc_idx_storm' && r.tenantId === tenantId && r.kind === 'alert')).toBe(
      true,
    );
    const other = await latestIncidentAlerts(database.db, {
      tenantId: 'ten_someone_else',
      incidentId: 'inc_idx_storm',
      limit: 50,
    });
    expect(other).toEqual([]);
  });

  it('give the pattern symptoms of that incident only', async () => {
    const symptoms = await incidentSymptoms(database.db, tenantId, 'inc_idx_small');
    expect(symptoms).toMatchObject({ service: 'checkout', labels: { region: 'eu-west-1' } });
    expect(symptoms!.alertNames).toEqual(['CheckoutErrors']);
  });
});

describe('the alerts correlated with an incident', () => {
  const at = new Date('2026-11-01T10:25:00.000Z');

  /** The definition, straight in SQL: the `limit` nearest by distance, then id; oldest first. */
  async function oracle(beforeMs: number, afterMs: number, limit: number): Promise<string[]> {
    const rows = await database.sql<{ id: string }[]>`
      select id from (
        select id, occurred_at from ingested_events
        where tenant_id = ${tenantId} and kind = 'alert'
          and occurred_at between ${new Date(at.getTime() - beforeMs).toISOString()}::timestamptz and ${new Date(at.getTime() + afterMs).toISOString()}::timestamptz
          and (incident_id is null or incident_id <> 'inc_idx_small')
        order by abs(extract(epoch from occurred_at - ${at.toISOString()}::timestamptz)), id collate "C"
        limit ${limit}
      ) n order by occurred_at, id collate "C"`;
    return rows.map((r) => r.id);
  }

  beforeAll(async () => {
    // Ties in time (same instant, and pairs at the same distance either side), alerts of no
    // incident, and what must never count: another tenant's alert, a deployment.
    const other = (await createTenant(database.db, { name: 'Other tenant', plan: 'plan_pro' })).id;
    await database.sql`
      insert into ingested_events (id, tenant_id, provider, kind, status, alert_name, title, description, raw, occurred_at, incident_id)
      values ('evt_idx_tie_b', ${tenantId}, 'generic', 'alert', 'firing', 'Tie', 'Tie', 'd', '{}', ${new Date(at.getTime() + 30_000).toISOString()}::timestamptz, null),
             ('evt_idx_tie_a', ${tenantId}, 'generic', 'alert', 'firing', 'Tie', 'Tie', 'd', '{}', ${new Date(at.getTime() + 30_000).toISOString()}::timestamptz, null),
             ('evt_idx_other_tenant', ${other}, 'generic', 'alert', 'firing', 'X', 'X', 'd', '{}', ${at.toISOString()}::timestamptz, null),
             ('evt_idx_deploy', ${tenantId}, 'github', 'deployment', null, null, 'Deploy', 'd', '{}', ${at.toISOString()}::timestamptz, null)`;
  });

  it('are the nearest in time to the first alert, ties by id, oldest first, none of its own, whatever the window', async () => {
    for (const [beforeMs, afterMs, limit] of [
      [2 * 3_600_000, 30 * 60_000, 300], // the investigation's window: both scans stop at the limit
      [10 * 60_000, 2 * 60_000, 300], // a narrow window: the forward scan runs out first
      [3_600_000, 3_600_000, 7], // a few: the pairs at equal distance split by id
      [60_000, 0, 50],
    ] as const) {
      const found = await nearestOtherAlerts(database.db, {
        tenantId,
        incidentId: 'inc_idx_small',
        at,
        beforeMs,
        afterMs,
        limit,
      });
      const expected = await oracle(beforeMs, afterMs, limit);
      expect(expected.length, `${beforeMs}/${afterMs}/${limit}`).toBeGreaterThan(0);
      expect(
        found.map((r) => r.id),
        `${beforeMs}/${afterMs}/${limit}`,
      ).toEqual(expected);
      expect(
        found.every((r) => r.incidentId !== 'inc_idx_small' && r.kind === 'alert' && r.tenantId === tenantId),
      ).toBe(true);
    }
  });
});
