import { describe, expect, it } from 'vitest';
import {
  bindSkillInput,
  findingText,
  MAX_FINDING_CHARS,
  skillRole,
  skillsForRole,
  tellingLine,
  type AgentSkill,
} from '../../src/skills/agent-skills.js';

const skill = (name: string, description: string, method = 'GET'): AgentSkill => ({
  id: `skl_${name}`,
  name,
  description,
  method,
  inputSchema: null,
});

const facts = {
  incidentId: 'inc_1',
  service: 'checkout-api',
  severity: 'high',
  alertName: 'HighErrorRate',
  since: new Date('2026-11-22T02:10:00Z'),
  until: new Date('2026-11-22T03:30:00Z'),
};

describe('which agent calls a skill', () => {
  it('routes by the words of the description, else of the name, in the order logs, metrics, deployment, code change', () => {
    expect(skillRole(skill('fetch_logs', 'Recent lines of a service'))).toBe('logs');
    expect(skillRole(skill('search', 'Search exceptions and stack traces'))).toBe('logs');
    expect(skillRole(skill('latency', 'p99 latency of an endpoint from Prometheus'))).toBe('metrics');
    expect(skillRole(skill('argo_history', 'Rollouts of an application'))).toBe('deployment');
    expect(skillRole(skill('git_log', 'Commits merged to main'))).toBe('code_change'); // the description decides
    expect(skillRole(skill('errors', 'Error logs and latency metrics'))).toBe('logs'); // logs goes first
    expect(skillRole(skill('customer_lookup', 'Looks up a customer account by id'))).toBeNull();
    expect(skillRole(skill('blogs', 'Company blog posts'))).toBeNull(); // whole words only
  });

  it('never routes a skill that is not a GET: those are actions that need an approval', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'])
      expect(skillRole(skill('fetch_logs', 'Error logs', method))).toBeNull();
    expect(skillRole(skill('fetch_logs', 'Error logs', 'get'))).toBe('logs');
  });

  it('gives an agent at most three skills, by name', () => {
    const all = ['e_logs', 'a_logs', 'd_logs', 'c_logs', 'b_logs'].map((n) => skill(n, 'Error logs'));
    expect(skillsForRole([...all, skill('cpu', 'CPU metrics')], 'logs').map((s) => s.name)).toEqual([
      'a_logs',
      'b_logs',
      'c_logs',
    ]);
    expect(skillsForRole(all, 'metrics')).toEqual([]);
  });
});

describe('bindSkillInput', () => {
  it('fills known properties by name in their type, ignoring case, _ and -', () => {
    const schema = {
      type: 'object',
      properties: {
        service_name: { type: 'string' },
        From: { type: 'string' },
        'end-time': { type: 'integer' },
        incidentId: { type: 'string' },
        alert_name: { type: 'string' },
        priority: { type: 'string' },
        limit: { type: 'number' },
        query: { type: 'string' },
        count: { type: 'string' }, // a count as a string does not fit
      },
      required: ['service_name', 'From'],
    };
    expect(bindSkillInput(schema, facts)).toEqual({
      ok: true,
      input: {
        service_name: 'checkout-api',
        From: '2026-11-22T02:10:00.000Z',
        'end-time': Date.parse('2026-11-22T03:30:00Z') / 1000,
        incidentId: 'inc_1',
        alert_name: 'HighErrorRate',
        priority: 'high',
        limit: 50,
      },
    });
  });

  it('refuses a skill whose required input it cannot fill, naming it', () => {
    const schema = {
      type: 'object',
      properties: { cluster: { type: 'string' }, service: { type: 'string' } },
      required: ['cluster', 'service'],
    };
    expect(bindSkillInput(schema, facts)).toEqual({ ok: false, missing: ['cluster'] });
    expect(
      bindSkillInput(
        { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
        { ...facts, service: null },
      ),
    ).toEqual({
      ok: false,
      missing: ['service'],
    });
    expect(
      bindSkillInput({ type: 'object', properties: { since: { type: 'boolean' } }, required: ['since'] }, facts),
    ).toEqual({ ok: false, missing: ['since'] });
  });

  it('sends service and window to a skill without an input schema', () => {
    expect(bindSkillInput(null, facts)).toEqual({
      ok: true,
      input: { service: 'checkout-api', since: '2026-11-22T02:10:00.000Z', until: '2026-11-22T03:30:00.000Z' },
    });
    expect(bindSkillInput(null, { ...facts, service: null })).toEqual({
      ok: true,
      input: { since: '2026-11-22T02:10:00.000Z', until: '2026-11-22T03:30:00.000Z' },
    });
  });
});

describe('findingText and tellingLine', () => {
  it('reads strings as lines, objects as key=value lines, arrays and nesting line by line', () => {
    expect(findingText('first\n\n  second  ')).toBe('first\nsecond');
    expect(
      findingText({
        service: 'checkout-api',
        entries: [{ level: 'ERROR', message: 'pool timeout' }, 'raw line', 42, null],
        meta: { total: 2 },
      }),
    ).toBe('service=checkout-api\nlevel=ERROR message=pool timeout\nraw line\n42\ntotal=2');
    expect(findingText(null)).toBe('');
    expect(findingText([])).toBe('');
  });

  it('keeps at most MAX_FINDING_CHARS', () => {
    const text = findingText(Array.from({ length: 1000 }, (_, i) => `line ${i} ${'x'.repeat(50)}`));
    expect(text.length).toBeLessThanOrEqual(MAX_FINDING_CHARS);
    expect(text.startsWith('line 0 ')).toBe(true);
  });

  it('picks the first line that tells of a failure, else the first', () => {
    expect(tellingLine('GET /health 200\nconnection refused by db-1\nERROR again')).toEqual({
      line: 'connection refused by db-1',
      alarming: true,
    });
    expect(tellingLine('all good\nstill good')).toEqual({ line: 'all good', alarming: false });
  });
});
