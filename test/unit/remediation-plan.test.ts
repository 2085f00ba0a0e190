/** Which recommended actions are steps the service can execute (ADR 0258): pure functions, no service. */
import { describe, expect, it } from 'vitest';
import { buildPlan, builtinStepFor, isExecutableStep } from '../../src/activities/remediation/plan.js';

const incident = (service: string) => ({ service, ownerTeam: 'payments' });
const actionOf = (text: string, service = 'checkout-api') => builtinStepFor(text, incident(service)).action;

describe('builtin actions read from a recommended action', () => {
  it('reads the verbs of the sentence', () => {
    expect(actionOf('Roll back deployment 7 of checkout-api (sha abcdef1)')).toBe('rollback_deployment');
    expect(actionOf('Roll-back the release of checkout-api')).toBe('rollback_deployment');
    expect(actionOf('Restart checkout-api')).toBe('restart_service');
    expect(actionOf('Scale out checkout-api to 6 replicas')).toBe('scale_service');
    expect(actionOf('Page the payments on-call')).toBe('notify_team');
    expect(actionOf("Follow runbook 'Checkout errors' step 1: Restart the checkout-api pods")).toBe('follow_runbook');
    expect(actionOf('Check that checkout-api recovers once orders-db is rolled back')).toBe('manual_step');
  });

  it('does not read a verb into a name: status-page, scale-api and rollback_svc are services', () => {
    for (const service of ['status-page', 'scale-api', 'rollback_svc', 'notify.worker']) {
      const text = `Read ${service}'s error logs around 10:59 UTC and the first alert (${service} 5xx) to find the failing call`;
      expect(actionOf(text, service), service).toBe('manual_step');
    }
  });
});

describe('isExecutableStep', () => {
  it('is every step but a manual one: a plan of checks and reading is for people only', () => {
    const manual = buildPlan(
      ["Read status-page's error logs to find the failing call", 'Add what you find as context to this investigation'],
      incident('status-page'),
      [],
    );
    expect(manual.map((s) => s.action)).toEqual(['manual_step', 'manual_step']);
    expect(manual.some(isExecutableStep)).toBe(false);
    const mixed = buildPlan(['Restart status-page', 'Confirm the errors stop'], incident('status-page'), []);
    expect(mixed.map(isExecutableStep)).toEqual([true, false]);
    expect(isExecutableStep({ kind: 'skill', action: 'manual_step' })).toBe(true);
    expect(isExecutableStep({ kind: 'integration', action: 'create_ticket' })).toBe(true);
    expect(isExecutableStep({ kind: 'builtin', action: 'notify_team' })).toBe(true);
  });
});
