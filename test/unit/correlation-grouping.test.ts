import { describe, expect, it } from 'vitest';
import { CandidateIncident, chooseIncident, SEPARATE_ORIGIN } from '../../src/correlation/grouping.js';
import { TopologyGraph } from '../../src/correlation/topology.js';

// web → api → orders-db, cart → orders-db, reports → warehouse → orders-db; a chain a→b→c→d→e.
const graph = new TopologyGraph([
  { source: 'web', target: 'api' },
  { source: 'api', target: 'orders-db' },
  { source: 'cart', target: 'orders-db' },
  { source: 'reports', target: 'warehouse' },
  { source: 'warehouse', target: 'orders-db' },
  { source: 'a', target: 'b' },
  { source: 'b', target: 'c' },
  { source: 'c', target: 'd' },
  { source: 'd', target: 'e' },
]);

describe('the topology graph', () => {
  it('relates a service to its dependencies and dependents within 3 hops, either way', () => {
    expect(graph.hops('web', 'orders-db')).toBe(2);
    expect(graph.hops('orders-db', 'web')).toBe(2);
    expect(graph.hops('a', 'd')).toBe(3);
    expect(graph.hops('a', 'e')).toBeUndefined();
    expect(graph.hops('api', 'api')).toBe(0);
  });

  it('relates two dependents of one shared service at 2 hops', () => {
    expect(graph.hops('api', 'cart')).toBe(2);
    expect(graph.hops('cart', 'warehouse')).toBe(2);
    expect(graph.hops('web', 'reports')).toBeUndefined();
  });

  it('does not relate two services through a dependency that most services use', () => {
    const edges = Array.from({ length: 12 }, (_, i) => ({ source: `svc-${i}`, target: 'auth' }));
    const hub = new TopologyGraph([...edges, { source: 'svc-0', target: 'db-0' }, { source: 'svc-1', target: 'db-0' }]);
    expect(hub.hops('svc-5', 'svc-6')).toBeUndefined();
    expect(hub.hops('svc-0', 'svc-1')).toBe(2); // through db-0, used by two
    expect(hub.hops('svc-5', 'auth')).toBe(1);
  });
});

function candidate(id: string, lastSeenAt: number, alerts: Array<[string, string | null, string[]]>) {
  const c = new CandidateIncident(id, lastSeenAt);
  for (const [alertId, service, origins] of alerts) c.add(alertId, service, origins);
  return c;
}

describe('choosing the incident an alert joins', () => {
  it('prefers a shared origin to any topology, then the fewest hops, then the most recent', () => {
    const byOrigin = candidate('inc_origin', 1, [['alt_1', 'search', ['deploy:abc123']]]);
    const near = candidate('inc_near', 2, [['alt_2', 'api', []]]);
    const far = candidate('inc_far', 3, [['alt_3', 'reports', []]]);
    expect(chooseIncident({ service: 'orders-db', origins: ['deploy:abc123'] }, [near, far, byOrigin], graph)).toEqual({
      incidentId: 'inc_origin',
      correlation: { reason: 'origin', relatedAlertId: 'alt_1' },
    });
    expect(chooseIncident({ service: 'orders-db', origins: [] }, [far, near], graph)).toEqual({
      incidentId: 'inc_near',
      correlation: { reason: 'topology', relatedAlertId: 'alt_2', hops: 1 },
    });
    const older = candidate('inc_older', 1, [['alt_4', 'cart', []]]);
    const newer = candidate('inc_newer', 5, [['alt_5', 'warehouse', []]]);
    expect(chooseIncident({ service: 'orders-db', origins: [] }, [older, newer], graph)?.incidentId).toBe('inc_newer');
  });

  it('joins nothing unrelated, nothing opened separately, and no rule group by origin', () => {
    const separate = candidate('inc_sep', 9, [['alt_6', 'api', [SEPARATE_ORIGIN]]]);
    const ruled = candidate('inc_rule', 9, [['alt_7', 'x', ['rule:crl_1|eu']]]);
    expect(chooseIncident({ service: 'api', origins: [] }, [separate], graph)).toBeUndefined();
    expect(chooseIncident({ service: 'y', origins: ['rule:crl_1|eu'] }, [ruled], graph)).toBeUndefined();
    expect(
      chooseIncident({ service: 'e', origins: [] }, [candidate('inc', 1, [['alt_8', 'a', []]])], graph),
    ).toBeUndefined();
    expect(
      chooseIncident({ service: null, origins: [] }, [candidate('inc', 1, [['alt_9', 'a', []]])], graph),
    ).toBeUndefined();
  });

  it('joins a possible cause only when it explains most of the incident, so an incident does not grow by its outermost member', () => {
    // web depends on api; an incident of web and cart: orders-db explains both (2 and 1 hops).
    const both = candidate('inc_both', 1, [
      ['alt_a', 'web', []],
      ['alt_b', 'cart', []],
    ]);
    expect(chooseIncident({ service: 'orders-db', origins: [] }, [both], graph)?.correlation).toMatchObject({
      hops: 1,
    });
    // An incident of web, reports and a: api explains web alone.
    const spread = candidate('inc_spread', 1, [
      ['alt_c', 'web', []],
      ['alt_d', 'reports', []],
      ['alt_e', 'a', []],
    ]);
    expect(chooseIncident({ service: 'api', origins: [] }, [spread], graph)).toBeUndefined();
    // A symptom of any one member joins: web depends on api.
    const apiIncident = candidate('inc_api', 1, [['alt_f', 'api', []]]);
    expect(chooseIncident({ service: 'web', origins: [] }, [apiIncident], graph)?.incidentId).toBe('inc_api');
  });

  it("ranks the tool's own grouping below the topology, and uses it when the topology says nothing", () => {
    const byTool = candidate('inc_tool', 9, [['alt_g', 'search', ['alertmanager:group:{}:{alertname="High5xx"}']]]);
    const byGraph = candidate('inc_graph', 1, [['alt_h', 'orders-db', []]]);
    const alert = { service: 'api', origins: ['alertmanager:group:{}:{alertname="High5xx"}'] };
    expect(chooseIncident(alert, [byTool, byGraph], graph)?.incidentId).toBe('inc_graph');
    expect(chooseIncident(alert, [byTool], graph)).toEqual({
      incidentId: 'inc_tool',
      correlation: { reason: 'origin', relatedAlertId: 'alt_g' },
    });
  });

  it('gives a root cause that alerts last to the incident it explains most', () => {
    // orders-db explains api, web and cart (1, 2 and 1 hops) and reports (2 hops) alone.
    const wide = candidate('inc_wide', 1, [
      ['alt_i', 'api', []],
      ['alt_j', 'cart', []],
      ['alt_k', 'web', []],
    ]);
    const narrow = candidate('inc_narrow', 9, [['alt_l', 'warehouse', []]]);
    expect(chooseIncident({ service: 'orders-db', origins: [] }, [narrow, wide], graph)?.incidentId).toBe('inc_wide');
  });
});
