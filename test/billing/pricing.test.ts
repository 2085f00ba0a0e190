import { describe, expect, it } from 'vitest';
import { loadBillingSettings } from '../../src/billing/settings.js';
import { loadConfig } from '../../src/config.js';
import { creditPacks, proratedUpgradeCents, subscriptionPeriod } from '../../src/domain/plans.js';

describe('billing prices and settings', () => {
  it('prorates an upgrade over the calendar month, to the cent', () => {
    const start = new Date('2026-11-01T00:00:00.000Z');
    expect(subscriptionPeriod(new Date('2026-11-16T12:00:00Z'))).toEqual({
      start,
      end: new Date('2026-12-01T00:00:00.000Z'),
    });
    expect(proratedUpgradeCents('plan_starter', 'plan_pro', start)).toBe(25_000);
    // Half of November (30 days) left: half of the 250 USD difference.
    expect(proratedUpgradeCents('plan_starter', 'plan_pro', new Date('2026-11-16T00:00:00Z'))).toBe(12_500);
    expect(proratedUpgradeCents('plan_pro', 'plan_business', new Date('2026-11-30T23:59:59Z'))).toBe(0);
    expect(Object.values(creditPacks).map((p) => [p.pack, p.units, p.priceUsd])).toEqual([
      ['investigations_10', 10, 49],
      ['investigations_50', 50, 199],
      ['events_1000', 1000, 29],
      ['events_10000', 10000, 199],
    ]);
  });

  it('reads STRIPE_* into the configuration: none without a secret key, the problems of a bad one', () => {
    expect(loadConfig({}).billing).toBeUndefined();
    const billing = loadConfig({ STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_WEBHOOK_SECRET: 'whsec_1' }).billing!;
    expect(billing.apiUrl.toString()).toBe('https://api.stripe.com/');
    expect([billing.timeoutMs, billing.webhookToleranceSeconds, billing.webhookSecret]).toEqual([
      10_000,
      300,
      'whsec_1',
    ]);
    expect(loadBillingSettings({ STRIPE_SECRET_KEY: 'sk', STRIPE_API_URL: 'ftp://x' })).toEqual({
      problems: ['STRIPE_API_URL: must be an http(s) URL'],
    });
    expect(() => loadConfig({ STRIPE_TIMEOUT_MS: '5' })).toThrow(/STRIPE_TIMEOUT_MS/);
  });
});
