/** The sign-in client of each configured provider. */
import type { SignInProvider } from '../../db/schema/identity.js';
import type { SignInProviders } from '../settings.js';
import { PROVIDER_TIMEOUT_MS, type SignInClient } from './common.js';
import { githubClient } from './github.js';
import { oidcClient } from './oidc.js';

export type { ProviderIdentity, SignInClient } from './common.js';
export { ProviderError } from './common.js';

/** The clients of the configured providers, made once per process (OIDC discovery is cached inside). */
export function createSignInClients(
  providers: SignInProviders,
  options: { timeoutMs?: number } = {},
): (provider: SignInProvider) => SignInClient | undefined {
  const timeoutMs = options.timeoutMs ?? PROVIDER_TIMEOUT_MS;
  const clients: Partial<Record<SignInProvider, SignInClient>> = {};
  if (providers.github) clients.github = githubClient(providers.github, timeoutMs);
  if (providers.google) clients.google = oidcClient(providers.google, timeoutMs);
  if (providers.oidc) clients.oidc = oidcClient(providers.oidc, timeoutMs);
  return (provider) => clients[provider];
}
