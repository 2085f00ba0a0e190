import { describe, expect, it } from 'vitest';
import { scenarios } from './scenarios/index.js';
import { overall, scoreGrouping } from './score.js';
import { truthOf } from './truth.js';
import { NOISE, TEST, type Truth } from './types.js';

const at = (base: number) => (second: number) => new Date(base + second * 1000);

describe('storm scenarios', () => {
  const built = scenarios.map((definition) => ({
    definition,
    scenario: definition.build(at(Date.UTC(2024, 4, 14, 9, 0))),
  }));

  it('are at least six, each with a unique name', () => {
    expect(built.length).toBeGreaterThanOrEqual(6);
    expect(new Set(built.map((b) => b.scenario.name)).size).toBe(built.length);
    for (const { definition, scenario } of built) expect(scenario.name).toBe(definition.name);
  });

  for (const { definition, scenario } of built) {
    describe(scenario.name, () => {
      it('parses with the real providers, one truth per alert, one truth per fingerprint', () => {
        const truth = truthOf(scenario);
        expect(truth.size).toBeGreaterThan(5);
        const labels = new Set([...truth.values()].map((t) => t.truth));
        for (const label of labels) expect([NOISE, TEST, ...Object.keys(scenario.outages)]).toContain(label);
      });

      it('labels as tests exactly what the providers mark, and has distractors', () => {
        const truth = [...truthOf(scenario).values()];
        for (const alert of truth)
          expect({ name: alert.name, test: alert.markedTest }).toEqual({
            name: alert.name,
            test: alert.truth === TEST,
          });
        expect(truth.some((a) => a.truth === NOISE)).toBe(true);
        expect(truth.some((a) => a.truth === TEST)).toBe(true);
      });

      it('has each outage alert from several services and tools, in its time span', () => {
        const truth = [...truthOf(scenario).values()];
        for (const [outage, { root }] of Object.entries(scenario.outages)) {
          const alerts = truth.filter((a) => a.truth === outage);
          expect(alerts.length, outage).toBeGreaterThanOrEqual(4);
          expect(new Set(alerts.map((a) => a.service)).size, outage).toBeGreaterThanOrEqual(3);
          expect(scenario.services.map((s) => s.name)).toContain(root);
        }
        const ats = scenario.deliveries.map((d) => d.at);
        expect(Math.max(...ats) - Math.min(...ats)).toBeLessThanOrEqual(definition.durationSeconds);
        expect(ats).toEqual([...ats].sort((a, b) => a - b));
      });

      it('names only services of the graph in its edges', () => {
        const names = new Set(scenario.services.map((s) => s.name));
        for (const [from, to] of scenario.edges) expect(names.has(from) && names.has(to), `${from} → ${to}`).toBe(true);
      });
    });
  }
});

describe('pairwise score', () => {
  const truth = new Map<string, Truth>([
    ['a1', 'A'],
    ['a2', 'A'],
    ['a3', 'A'],
    ['b1', 'B'],
    ['b2', 'B'],
    ['n1', NOISE],
    ['n2', NOISE],
    ['t1', TEST],
  ]);

  it('is perfect when each outage is one incident and the rest alone', () => {
    const score = scoreGrouping(
      truth,
      new Map([
        ['a1', 'i1'],
        ['a2', 'i1'],
        ['a3', 'i1'],
        ['b1', 'i2'],
        ['b2', 'i2'],
        ['n1', 'i3'],
        ['n2', 'i4'],
      ]),
    );
    expect(score).toMatchObject({
      alerts: 7,
      truePairs: 4,
      predictedPairs: 4,
      correctPairs: 4,
      precision: 1,
      recall: 1,
    });
    expect(score.outages).toEqual({
      A: { alerts: 3, incidents: 1, unassigned: 0 },
      B: { alerts: 2, incidents: 1, unassigned: 0 },
    });
    expect(score.noise).toEqual({ alerts: 2, incidents: 2, withOutageAlerts: 0 });
    expect(score.tests).toEqual({ alerts: 1, inIncidents: 0 });
    expect(score.incidents).toBe(4);
  });

  it('has no predicted pairs when every alert is its own incident (precision undefined, recall 0)', () => {
    const score = scoreGrouping(truth, new Map([...truth.keys()].map((k) => [k, `inc-${k}`])));
    expect(score).toMatchObject({ predictedPairs: 0, correctPairs: 0, precision: null, recall: 0 });
    expect(score.outages.A!.incidents).toBe(3);
    expect(score.tests.inIncidents).toBe(1);
  });

  it('counts wrong pairs when everything is one incident, and held alerts as alone', () => {
    const all = scoreGrouping(truth, new Map([...truth.keys()].map((k) => [k, 'one'])));
    // 7 alerts (the test is left out): 21 pairs, 4 of them right.
    expect(all).toMatchObject({ predictedPairs: 21, correctPairs: 4, recall: 1 });
    expect(all.precision).toBeCloseTo(4 / 21);
    expect(all.noise.withOutageAlerts).toBe(2);
    const held = scoreGrouping(
      truth,
      new Map([
        ['a1', 'i1'],
        ['a2', 'i1'],
      ]),
    );
    expect(held).toMatchObject({ predictedPairs: 1, correctPairs: 1, precision: 1, recall: 0.25 });
    expect(held.outages.A).toEqual({ alerts: 3, incidents: 1, unassigned: 1 });
    expect(overall([all, held])).toMatchObject({ truePairs: 8, predictedPairs: 22, correctPairs: 5 });
  });
});
