/**
 * A GitHub-compatible OAuth server on 127.0.0.1 for sign-in tests: the web flow's authorize page
 * (a sign-in form the test posts: allow or deny), `/login/oauth/access_token` (client secret,
 * redirect_uri, PKCE S256 verifier and single-use codes checked, refusals answered as GitHub
 * does: 200 with an `error` member), and the REST API's `/user` and `/user/emails` under
 * `/api/v3` (GitHub Enterprise Server's layout) in GitHub's documented shapes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GithubAccount {
  id: number;
  login: string;
  name: string | null;
  /** The public profile email (null when private, as most are). */
  email: string | null;
  emails: Array<{ email: string; primary: boolean; verified: boolean; visibility: 'public' | 'private' | null }>;
}

interface PendingAuthorization {
  clientId: string;
  redirectUri: string;
  state: string;
  scope: string;
  codeChallenge: string;
}

interface IssuedCode extends PendingAuthorization {
  login: string;
  used: boolean;
}

export interface GithubOAuthServer {
  url: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, GithubAccount>;
  /** Every authorize request's query, for assertions (PKCE method, scopes). */
  authorizeRequests: URLSearchParams[];
  /** Every token request's form (with the secret: never to be echoed by the service). */
  tokenRequests: URLSearchParams[];
  /** Every code and access token it issued: none may appear in the service's answers or logs. */
  issued: string[];
  close(): Promise<void>;
}

const ERROR_URI =
  'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors';

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** `GET /user` as GitHub documents it (the fields a sign-in reads, and a few around them). */
function userJson(account: GithubAccount) {
  return {
    login: account.login,
    id: account.id,
    node_id: Buffer.from(`04:User${account.id}`).toString('base64'),
    avatar_url: `https://avatars.githubusercontent.com/u/${account.id}?v=4`,
    html_url: `https://github.com/${account.login}`,
    type: 'User',
    site_admin: false,
    name: account.name,
    company: null,
    blog: '',
    location: null,
    email: account.email,
    hireable: null,
    bio: null,
    public_repos: 2,
    followers: 20,
    following: 0,
    created_at: '2008-01-14T04:33:35Z',
    updated_at: '2008-01-14T04:33:35Z',
  };
}

export async function startGithubOAuthServer(options: {
  clientId?: string;
  clientSecret?: string;
  callbackUrl: string;
}): Promise<GithubOAuthServer> {
  const clientId = options.clientId ?? 'Iv1.8a61f9b3a7aba766';
  const clientSecret = options.clientSecret ?? `ghsecret_${randomBytes(16).toString('hex')}`;
  const accounts = new Map<string, GithubAccount>();
  const pending = new Map<string, PendingAuthorization>();
  const codes = new Map<string, IssuedCode>();
  const tokens = new Map<string, string>();
  const authorizeRequests: URLSearchParams[] = [];
  const tokenRequests: URLSearchParams[] = [];
  const issued: string[] = [];

  const tokenError = (res: ServerResponse, error: string, description: string) =>
    send(res, 200, { error, error_description: description, error_uri: `${ERROR_URI}#${error.replace(/_/g, '-')}` });

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://github.test');
      if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        authorizeRequests.push(url.searchParams);
        const q = url.searchParams;
        if (q.get('client_id') !== clientId) return send(res, 404, 'Not Found', 'text/plain');
        const redirectUri = q.get('redirect_uri') ?? options.callbackUrl;
        if (redirectUri !== options.callbackUrl) {
          return send(res, 200, '<p>The redirect_uri is not associated with this application.</p>', 'text/html');
        }
        const id = randomBytes(12).toString('hex');
        pending.set(id, {
          clientId,
          redirectUri,
          state: q.get('state') ?? '',
          scope: q.get('scope') ?? '',
          codeChallenge: q.get('code_challenge_method') === 'S256' ? (q.get('code_challenge') ?? '') : '',
        });
        return send(
          res,
          200,
          `<form method="post" action="/login/oauth/authorize/${id}"><input name="login"><button name="decision" value="allow">Authorize</button><button name="decision" value="deny">Cancel</button></form>`,
          'text/html; charset=utf-8',
        );
      }
      const decision = /^\/login\/oauth\/authorize\/([0-9a-f]+)$/.exec(url.pathname);
      if (req.method === 'POST' && decision) {
        const request = pending.get(decision[1]!);
        pending.delete(decision[1]!);
        if (!request) return send(res, 404, 'Not Found', 'text/plain');
        const form = new URLSearchParams(await bodyOf(req));
        const back = new URL(request.redirectUri);
        if (form.get('decision') !== 'allow') {
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('error_description', 'The user has denied your application access.');
          back.searchParams.set(
            'error_uri',
            'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied',
          );
        } else {
          const login = form.get('login') ?? '';
          if (!accounts.has(login)) return send(res, 200, '<p>Incorrect username or password.</p>', 'text/html');
          const code = randomBytes(10).toString('hex');
          codes.set(code, { ...request, login, used: false });
          issued.push(code);
          back.searchParams.set('code', code);
        }
        back.searchParams.set('state', request.state);
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = new URLSearchParams(await bodyOf(req));
        tokenRequests.push(form);
        if (!req.headers.accept?.includes('application/json')) return send(res, 406, 'Accept JSON', 'text/plain');
        if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret) {
          return tokenError(
            res,
            'incorrect_client_credentials',
            'The client_id and/or client_secret passed are incorrect.',
          );
        }
        const grant = codes.get(form.get('code') ?? '');
        if (!grant || grant.used) {
          return tokenError(res, 'bad_verification_code', 'The code passed is incorrect or expired.');
        }
        grant.used = true;
        if ((form.get('redirect_uri') ?? grant.redirectUri) !== grant.redirectUri) {
          return tokenError(
            res,
            'redirect_uri_mismatch',
            'The redirect_uri MUST match the registered callback URL for this application.',
          );
        }
        const verifier = form.get('code_verifier') ?? '';
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        if (!grant.codeChallenge || challenge !== grant.codeChallenge) {
          return tokenError(res, 'bad_verification_code', 'The code passed is incorrect or expired.');
        }
        const token = `gho_${randomBytes(18).toString('base64url')}`;
        tokens.set(token, grant.login);
        issued.push(token);
        return send(res, 200, { access_token: token, token_type: 'bearer', scope: grant.scope.split(' ').join(',') });
      }
      if (req.method === 'GET' && (url.pathname === '/api/v3/user' || url.pathname === '/api/v3/user/emails')) {
        const token = /^(?:Bearer|token) (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
        const account = token ? accounts.get(tokens.get(token) ?? '') : undefined;
        if (!account) {
          return send(res, 401, {
            message: 'Bad credentials',
            documentation_url: 'https://docs.github.com/rest',
            status: '401',
          });
        }
        if (url.pathname === '/api/v3/user/emails') return send(res, 200, account.emails);
        return send(res, 200, userJson(account));
      }
      return send(res, 404, { message: 'Not Found' });
    })().catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiUrl: `${url}/api/v3`,
    clientId,
    clientSecret,
    accounts,
    authorizeRequests,
    tokenRequests,
    issued,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Drives GitHub's authorize page as its user would: sign in as `login` and allow, or deny. */
export function githubDecisionForm(page: { text: string; url: string }): string {
  const action = /action="([^"]+)"/.exec(page.text)?.[1];
  if (!action) throw new Error(`no authorize form on ${page.url}: ${page.text.slice(0, 200)}`);
  return new URL(action, page.url).toString();
}
