/**
 * The truth of a scenario by alert: each delivery parsed by the service's own provider, so an
 * alert is known by the fingerprint the service will give it, and its label is the one the
 * scenario wrote beside it.
 */
import { findProvider } from '../../src/ingest/providers/index.js';
import type { StormDelivery, StormScenario, Truth } from './types.js';

export interface AlertTruth {
  fingerprint: string;
  truth: Truth;
  service: string | null;
  name: string;
  /** What the provider says on its own (Watchdog, a Grafana test…): for the scenario checks. */
  markedTest: boolean;
}

/** The alerts of one delivery with their truth, in the body's order. */
export function alertsOf(delivery: StormDelivery): AlertTruth[] {
  const provider = findProvider(delivery.provider);
  if (!provider) throw new Error(`no provider ${delivery.provider}`);
  const headers = delivery.headers ?? {};
  const parsed = provider.parse(structuredClone(delivery.body), (name) => headers[name.toLowerCase()]);
  const alerts = parsed.events.filter((event) => event.kind === 'alert');
  if (alerts.length !== delivery.truth.length) {
    throw new Error(
      `a ${delivery.provider} delivery at ${delivery.at} s has ${alerts.length} alerts and ${delivery.truth.length} truths`,
    );
  }
  return alerts.map((alert, i) => ({
    fingerprint: alert.fingerprint,
    truth: delivery.truth[i]!,
    service: alert.service,
    name: alert.alertName,
    markedTest: alert.test === true,
  }));
}

/** Every distinct alert of the scenario (by fingerprint) with its truth; a fingerprint with two truths is refused. */
export function truthOf(scenario: StormScenario): Map<string, AlertTruth> {
  const byFingerprint = new Map<string, AlertTruth>();
  for (const delivery of scenario.deliveries) {
    for (const alert of alertsOf(delivery)) {
      const seen = byFingerprint.get(alert.fingerprint);
      if (seen && seen.truth !== alert.truth) {
        throw new Error(
          `${scenario.name}: ${alert.fingerprint} (${alert.name}) is labelled both ${seen.truth} and ${alert.truth}`,
        );
      }
      byFingerprint.set(alert.fingerprint, alert);
    }
  }
  return byFingerprint;
}
