/**
 * An OpenID Connect provider (Google, Keycloak, Auth0, Entra ID…) by its issuer: discovery, the
 * authorization code flow with PKCE (S256) and a nonce, the id_token verified against the
 * provider's JWKS (all openid-client's), and the userinfo endpoint when the id_token carries no
 * email (providers that keep claims out of it).
 */
import * as client from 'openid-client';
import type { OidcSignIn } from '../settings.js';
import {
  checkedProviderUrl,
  isPlainHttp,
  providerErrorOf,
  type AuthorizationRequest,
  type CallbackChecks,
  type ProviderIdentity,
  type SignInClient,
} from './common.js';

const SCOPES = 'openid email profile';

/** Some providers (older Google, Cognito) send `email_verified` as the string "true". */
const isTrue = (value: unknown) => value === true || value === 'true';
/**
 * The provider vouches for the email: `email_verified` true, or, only when it sends none, Entra
 * ID's optional `xms_edov` (the email's domain owner is verified; Entra never sends
 * `email_verified` for organisational accounts).
 */
const verifiedEmail = (claims: Record<string, unknown>) =>
  claims.email_verified !== undefined ? isTrue(claims.email_verified) : isTrue(claims.xms_edov);
const textOrNull = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);

export function oidcClient(settings: OidcSignIn, timeoutMs: number): SignInClient {
  // Discovery once per process; a failed one is forgotten so the next sign-in tries again.
  let configuration: Promise<client.Configuration> | undefined;
  const configured = () => {
    configuration ??= (async () => {
      const issuer = checkedProviderUrl(settings.issuer, 'OpenID Connect issuer');
      return client.discovery(issuer, settings.clientId, settings.clientSecret, client.ClientSecretPost(), {
        timeout: Math.ceil(timeoutMs / 1000),
        ...(isPlainHttp(issuer) ? { execute: [client.allowInsecureRequests] } : {}),
      });
    })().catch((err: unknown) => {
      configuration = undefined;
      throw providerErrorOf(err, []);
    });
    return configuration;
  };

  return {
    usesNonce: true,
    async authorizationUrl(request: AuthorizationRequest): Promise<URL> {
      return client.buildAuthorizationUrl(await configured(), {
        redirect_uri: request.redirectUri,
        response_type: 'code',
        scope: SCOPES,
        state: request.state,
        code_challenge: request.codeChallenge,
        code_challenge_method: 'S256',
        nonce: request.nonce ?? '',
      });
    },
    async identify(callbackUrl: URL, checks: CallbackChecks): Promise<ProviderIdentity> {
      const config = await configured();
      try {
        const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce ?? '',
        });
        const idToken = tokens.claims();
        if (!idToken) throw new Error('no id_token');
        let claims: Record<string, unknown> = idToken;
        if (textOrNull(idToken.email) === null) {
          const userinfo = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
          claims = { ...userinfo, ...idToken, email: userinfo.email, email_verified: userinfo.email_verified };
        }
        return {
          subject: idToken.sub,
          email: textOrNull(claims.email),
          emailVerified: verifiedEmail(claims),
          name: textOrNull(claims.name),
        };
      } catch (err) {
        throw providerErrorOf(err, ['invalid_grant']);
      }
    },
  };
}
