/**
 * A real OpenID Connect provider (the `oidc-provider` package) on 127.0.0.1 for sign-in tests:
 * discovery, JWKS, authorization code flow with PKCE, id_tokens, userinfo. Its login and consent
 * are two small forms the test posts over HTTP (dev interactions off), as a person would.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface OidcAccount {
  email: string;
  /** Absent: the provider sends no `email_verified` claim (Entra ID's organisational accounts). */
  emailVerified?: boolean;
  name: string;
  /** Entra ID's optional claim: the email's domain owner is verified. */
  xmsEdov?: boolean;
}

export interface OidcServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by subject (the login name typed into the form). */
  accounts: Map<string, OidcAccount>;
  close(): Promise<void>;
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

const page = (res: ServerResponse, html: string) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
};

/**
 * `idTokenClaims`: Google puts email claims in the id_token (`conformIdTokenClaims: false`);
 * a strictly conforming provider keeps them for userinfo, which the service then reads.
 */
export async function startOidcServer(options: {
  redirectUri: string;
  idTokenClaims: boolean;
  clientId?: string;
}): Promise<OidcServer> {
  const accounts = new Map<string, OidcAccount>();
  const clientId = options.clientId ?? `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = `secret-${randomBytes(24).toString('hex')}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: randomBytes(6).toString('hex'), use: 'sig', alg: 'RS256' };

  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified', 'xms_edov'], profile: ['name'] },
    conformIdTokenClaims: !options.idTokenClaims,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        claims: () => ({
          sub,
          email: account.email,
          name: account.name,
          ...(account.emailVerified !== undefined ? { email_verified: account.emailVerified } : {}),
          ...(account.xmsEdov !== undefined ? { xms_edov: account.xmsEdov } : {}),
        }),
      };
    },
  });
  const callback = provider.callback();

  handle = (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const match = /^\/interaction\/([^/]+)(?:\/(login|confirm|abort))?$/.exec(url.pathname);
    if (!match) return void callback(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      const uid = match[1]!;
      const action = match[2];
      if (req.method === 'GET' && !action) {
        if (details.prompt.name === 'login') {
          return page(
            res,
            `<h1>Sign in</h1><form method="post" action="/interaction/${uid}/login"><input name="login"><input name="password" type="password"><button>Sign in</button></form><form method="post" action="/interaction/${uid}/abort"><button>Cancel</button></form>`,
          );
        }
        return page(
          res,
          `<h1>Authorize</h1><form method="post" action="/interaction/${uid}/confirm"><button>Allow</button></form><form method="post" action="/interaction/${uid}/abort"><button>Deny</button></form>`,
        );
      }
      if (req.method === 'POST' && action === 'login') {
        const login = (await formOf(req)).get('login') ?? '';
        if (!accounts.has(login)) return page(res, '<p>Invalid login</p>');
        return provider.interactionFinished(
          req,
          res,
          { login: { accountId: login } },
          { mergeWithLastSubmission: false },
        );
      }
      if (req.method === 'POST' && action === 'confirm') {
        const { params, session, prompt } = details;
        const grant = details.grantId
          ? (await provider.Grant.find(details.grantId))!
          : new provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string });
        const missing = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
        if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
        if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
        const grantId = await grant.save();
        return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      }
      if (req.method === 'POST' && action === 'abort') {
        return provider.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'End-User aborted interaction' },
          { mergeWithLastSubmission: false },
        );
      }
      res.statusCode = 405;
      res.end();
    })().catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  };

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The action of the first form on a provider page whose action ends with `/what`. */
export function formAction(page: { text: string; url: string }, what: string): string {
  const action = new RegExp(`action="([^"]*/${what})"`).exec(page.text)?.[1];
  if (!action) throw new Error(`no ${what} form on ${page.url}: ${page.text.slice(0, 300)}`);
  return new URL(action, page.url).toString();
}
