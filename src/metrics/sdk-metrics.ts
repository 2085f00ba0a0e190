/**
 * The Temporal SDK's own metrics (ADR 0282). Core serves them itself, on an address of its own:
 * we bind it to a loopback port nobody scrapes, and the worker's /metrics appends its text, so one
 * scrape (behind METRICS_TOKEN and the worker's bind address) gets both.
 */
import { createServer } from 'node:net';
import { Counter, type Registry } from 'prom-client';
import { METRIC_PREFIX } from './api-metrics.js';

/** How long a worker scrape waits for core's text before it answers with the service's alone. */
export const SDK_METRICS_TIMEOUT_MS = 2_000;

/** A loopback address for core's exporter: free when picked, and core binds it at once. */
export function loopbackMetricsAddress(): Promise<string> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
}

/**
 * Reads core's exposition at `url`, or '' when it does not answer within `timeoutMs` (a scrape
 * then still gets the service's metrics), counting each such failure in `registry`.
 */
export function sdkMetricsReader(
  url: string,
  registry: Registry,
  timeoutMs: number = SDK_METRICS_TIMEOUT_MS,
): () => Promise<string> {
  const failures = new Counter({
    name: `${METRIC_PREFIX}worker_sdk_metrics_failures_total`,
    help: "Worker scrapes that could not read the Temporal SDK's own metrics (served without them)",
    registers: [registry],
  });
  return async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) throw new Error(`status ${res.status}`);
      const text = await res.text();
      return text === '' || text.endsWith('\n') ? text : `${text}\n`;
    } catch {
      failures.inc();
      return '';
    }
  };
}
