import type { WebhookProvider } from '../types.js';
import { alertmanagerProvider } from './alertmanager.js';
import { datadogProvider } from './datadog.js';
import { genericProvider } from './generic.js';
import { githubProvider } from './github.js';
import { grafanaProvider } from './grafana.js';
import { sentryProvider } from './sentry.js';

/** Every webhook provider, keyed by its name (the `:provider` in the webhook URL). */
export const providers: Record<string, WebhookProvider> = Object.freeze(
  Object.fromEntries(
    [alertmanagerProvider, grafanaProvider, datadogProvider, sentryProvider, githubProvider, genericProvider].map(
      (provider) => [provider.name, provider],
    ),
  ),
);

export function findProvider(name: string): WebhookProvider | undefined {
  return Object.hasOwn(providers, name) ? providers[name] : undefined;
}
