import { describe, expect, it } from 'vitest';
import { canonicalName, changeMatcher } from '../../src/activities/investigation/change-ties.js';

describe('tool-side names of a service', () => {
  it('drop deploy verbs, environments and kind suffixes', () => {
    expect(canonicalName('payments-prod')).toBe('payments');
    expect(canonicalName('deploy-accounts-api')).toBe('accounts');
    expect(canonicalName('payments-api')).toBe('payments');
    expect(canonicalName('payments-worker')).toBe('payments-worker');
  });

  it('tie an Argo CD app or a deploy workflow to the service they name, after exact ties', () => {
    const match = changeMatcher(
      [
        { name: 'payments-api', hops: 0, repositories: [] },
        { name: 'payments-worker', hops: 1, repositories: [] },
      ] as never,
      '',
    );
    expect(match({ service: 'payments-prod', labels: {} })).toEqual({ hops: 0, matchedBy: 'service' });
    expect(match({ service: 'deployments', labels: { workflow: 'deploy-payments-worker' } })).toEqual({
      hops: 1,
      matchedBy: 'service',
    });
    expect(match({ service: 'billing-prod', labels: {} })).toBeUndefined();
  });
});
