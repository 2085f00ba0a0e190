import type { WebhookProvider } from '../types.js';
import { alertmanagerProvider } from './alertmanager.js';
import { argocdProvider } from './argocd.js';
import { datadogProvider } from './datadog.js';
import { flagsmithProvider } from './flagsmith.js';
import { fluxProvider } from './flux.js';
import { genericProvider } from './generic.js';
import { githubProvider } from './github.js';
import { grafanaProvider } from './grafana.js';
import { launchdarklyProvider } from './launchdarkly.js';
import { sentryProvider } from './sentry.js';
import { unleashProvider } from './unleash.js';

/** Every webhook provider, keyed by its name (the `:provider` in the webhook URL). */
export const providers: Record<string, WebhookProvider> = Object.freeze(
  Object.fromEntries(
    [
      alertmanagerProvider,
      grafanaProvider,
      datadogProvider,
      sentryProvider,
      githubProvider,
      genericProvider,
      launchdarklyProvider,
      unleashProvider,
      flagsmithProvider,
      argocdProvider,
      fluxProvider,
    ].map((provider) => [provider.name, provider]),
  ),
);

export function findProvider(name: string): WebhookProvider | undefined {
  return Object.hasOwn(providers, name) ? providers[name] : undefined;
}
