import { z } from '@hono/zod-openapi';

export const ProviderParam = z.object({
  provider: z
    .string()
    .max(64)
    .openapi({
      param: { name: 'provider', in: 'path' },
      description: '`github`, `google` or `oidc` (a generic OpenID Connect provider)',
      example: 'github',
    }),
});

export const SignInStartQuery = z.object({
  tenant: z
    .string()
    .regex(/^ten_[0-9a-z]{26}$/, 'Expected a tenant id (ten_…)')
    .optional()
    .openapi({
      param: { name: 'tenant', in: 'query' },
      description: 'The tenant to sign in to, for a person who is a member of several',
    }),
  redirect_to: z
    .string()
    .max(2048)
    .optional()
    .openapi({
      param: { name: 'redirect_to', in: 'query' },
      description:
        'Where to send the browser at the end (tokens in the URL fragment, errors as ?error=): an absolute URL whose origin is listed in AUTH_REDIRECT_ORIGINS',
      example: 'https://app.example.com/signed-in',
    }),
});

const callbackParam = (name: string, description: string) =>
  z
    .string()
    .max(2048)
    .optional()
    .openapi({ param: { name, in: 'query' }, description });

export const SignInCallbackQuery = z.object({
  state: callbackParam('state', 'The state the service sent the provider'),
  code: callbackParam('code', 'The authorization code'),
  error: callbackParam('error', 'The provider refused (e.g. `access_denied`)'),
  error_description: callbackParam('error_description', "The provider's words for its refusal"),
  error_uri: callbackParam('error_uri', "The provider's page about its refusal"),
  iss: callbackParam('iss', 'The issuer (RFC 9207), checked when the provider sends it'),
  scope: callbackParam('scope', 'Scopes granted (Google)'),
  authuser: callbackParam('authuser', 'Google'),
  prompt: callbackParam('prompt', 'Google'),
  hd: callbackParam('hd', 'Google Workspace domain'),
  session_state: callbackParam('session_state', 'OpenID Connect session management (Keycloak, Entra ID)'),
});

export const TenantChoiceDetails = z
  .object({
    tenants: z.array(z.object({ tenantId: z.string(), name: z.string(), role: z.enum(['admin', 'member']) })),
  })
  .openapi('TenantChoiceDetails');
