/**
 * Local stand-ins for integration providers (node:http on 127.0.0.1), answering in the shapes the
 * providers document:
 * - GitHub's OAuth web flow (`/login/oauth/authorize`, `/login/oauth/access_token`: errors in a
 *   200, `scope` comma-separated), grant revocation (`DELETE /applications/{client_id}/grant`) and
 *   `POST /repos/{owner}/{repo}/issues`;
 * - Slack's `oauth/v2/authorize` and `oauth.v2.access` (bot token, `team`, `authed_user`,
 *   `ok: false` errors), `chat.postMessage`, `auth.revoke`;
 * - PagerDuty's `oauth/authorize`, `oauth/token` (`expires_in`, `refresh_token`, rotated on
 *   refresh), `oauth/revoke` and `POST /incidents/{id}/notes`;
 * - Datadog's `GET /api/v1/validate` (`{ valid: true }`, 403 `{ errors: ["Forbidden"] }`) and
 *   Opsgenie's `GET /v2/account` (`GenieKey`; 401 "Could not authenticate").
 * The authorize page approves at once (or answers `error=access_denied` when told to deny), and
 * every request is recorded.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ProviderKind = 'github' | 'slack' | 'pagerduty' | 'datadog' | 'opsgenie';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  scope: string;
  challenge: string | undefined;
}

export interface ProviderServer {
  url: string;
  kind: ProviderKind;
  clientId: string;
  clientSecret: string;
  received: RecordedRequest[];
  hits(path: string): RecordedRequest[];
  /** Access tokens the provider accepts now (revoked and refreshed-away ones are removed). */
  validTokens: Set<string>;
  /** Refresh tokens the provider accepts now. */
  refreshTokens: Set<string>;
  /** Seconds to put in `expires_in` (PagerDuty). */
  expiresIn: number;
  /** The next authorize request answers `error=access_denied`. */
  denyNext: boolean;
  /** How long a refresh takes (so that two callers are in flight at once). */
  refreshDelayMs: number;
  /** The API key (Datadog) or GenieKey (Opsgenie) accepted. */
  goodKey: string;
  close(): Promise<void>;
}

const random = (n = 20) => randomBytes(n).toString('base64url');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

interface Ctx {
  kind: ProviderKind;
  state: ProviderServer;
  codes: Map<string, IssuedCode>;
}

/** One request as the routes read it; `json` answers and returns true (answered). */
interface Exchange {
  req: http.IncomingMessage;
  url: URL;
  res: http.ServerResponse;
  body: string;
  form: URLSearchParams;
  path: string;
  json: (status: number, value: unknown) => true;
}

const bearer = (req: http.IncomingMessage) => /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];

function issueCode(ctx: Ctx, q: URLSearchParams): string {
  const code = ctx.kind === 'github' ? random(10) : random(24);
  ctx.codes.set(code, {
    clientId: q.get('client_id') ?? '',
    redirectUri: q.get('redirect_uri') ?? '',
    scope: q.get('scope') ?? '',
    challenge: q.get('code_challenge') ?? undefined,
  });
  return code;
}

/** Checks the client and the code: the code's record when they hold, else the error code. */
function redeem(ctx: Ctx, form: URLSearchParams, headers: http.IncomingHttpHeaders): IssuedCode | string {
  const basic = /^Basic (.+)$/.exec(headers.authorization ?? '')?.[1];
  const [clientId, secret] = basic
    ? Buffer.from(basic, 'base64').toString().split(':')
    : [form.get('client_id'), form.get('client_secret')];
  if (clientId !== ctx.state.clientId || secret !== ctx.state.clientSecret)
    return ctx.kind === 'github' ? 'incorrect_client_credentials' : 'invalid_client';
  const issued = ctx.codes.get(form.get('code') ?? '');
  ctx.codes.delete(form.get('code') ?? ''); // single use
  if (!issued)
    return ctx.kind === 'github' ? 'bad_verification_code' : ctx.kind === 'slack' ? 'invalid_code' : 'invalid_grant';
  if (issued.redirectUri !== form.get('redirect_uri'))
    return ctx.kind === 'github' ? 'redirect_uri_mismatch' : 'invalid_grant';
  if (issued.challenge && s256(form.get('code_verifier') ?? '') !== issued.challenge) return 'invalid_grant';
  return issued;
}

function tokenAnswer(ctx: Ctx, issued: IssuedCode | undefined): Record<string, unknown> {
  if (ctx.kind === 'github') {
    const token = `gho_${random(27).slice(0, 36)}`;
    ctx.state.validTokens.add(token);
    return { access_token: token, scope: issued!.scope.split(' ').join(','), token_type: 'bearer' };
  }
  if (ctx.kind === 'slack') {
    const token = `xoxb-17653672481-19874698323-${random(18)}`;
    ctx.state.validTokens.add(token);
    return {
      ok: true,
      access_token: token,
      token_type: 'bot',
      scope: issued!.scope,
      bot_user_id: 'U0KRQLJ9H',
      app_id: 'A0KRD7HC3',
      team: { name: 'Slack Softball Team', id: 'T9TK3CUKW' },
      enterprise: null,
      authed_user: { id: 'U1234', scope: 'chat:write', access_token: `xoxp-${random(12)}`, token_type: 'user' },
    };
  }
  const access = random(32);
  const refresh = random(32);
  ctx.state.validTokens.add(access);
  ctx.state.refreshTokens.add(refresh);
  return {
    access_token: access,
    token_type: 'bearer',
    expires_in: ctx.state.expiresIn,
    refresh_token: refresh,
    scope: issued?.scope ?? 'incidents.read incidents.write services.read oncalls.read schedules.read',
  };
}

/** The OAuth endpoints: authorize page, token, revocation. Whether it answered. */
function oauthRoute(ctx: Ctx, r: Exchange): boolean {
  const { req, url, res, json, form, path } = r;
  const { kind, state } = ctx;
  const authorizePath = {
    github: '/login/oauth/authorize',
    slack: '/oauth/v2/authorize',
    pagerduty: '/oauth/authorize',
  };
  if (kind !== 'datadog' && kind !== 'opsgenie' && path === authorizePath[kind]) {
    // The person approves (or denies) at once: back to redirect_uri with a code or an error.
    const back = new URL(url.searchParams.get('redirect_uri')!);
    back.searchParams.set('state', url.searchParams.get('state') ?? '');
    if (state.denyNext) {
      state.denyNext = false;
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user has denied your application access.');
    } else back.searchParams.set('code', issueCode(ctx, url.searchParams));
    res.writeHead(302, { location: back.toString() });
    res.end();
    return true;
  }
  switch (`${kind} ${req.method} ${path}`) {
    case 'github POST /login/oauth/access_token': {
      const issued = redeem(ctx, form, req.headers);
      // GitHub answers errors with 200.
      if (typeof issued === 'string')
        return json(200, {
          error: issued,
          error_description: 'The code passed is incorrect or expired.',
          error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${issued}`,
        });
      return json(200, tokenAnswer(ctx, issued));
    }
    case 'slack POST /api/oauth.v2.access': {
      const issued = redeem(ctx, form, req.headers);
      return typeof issued === 'string' ? json(200, { ok: false, error: issued }) : json(200, tokenAnswer(ctx, issued));
    }
    case 'pagerduty POST /oauth/token': {
      if (form.get('grant_type') === 'refresh_token') {
        const old = form.get('refresh_token') ?? '';
        if (!state.refreshTokens.has(old) || form.get('client_secret') !== state.clientSecret)
          return json(400, { error: 'invalid_grant', error_description: 'The refresh token is invalid' });
        state.refreshTokens.delete(old); // rotated
        for (const t of state.validTokens) state.validTokens.delete(t); // the old access token dies
        const answer = tokenAnswer(ctx, undefined);
        setTimeout(() => json(200, answer), state.refreshDelayMs);
        return true;
      }
      const issued = redeem(ctx, form, req.headers);
      return typeof issued === 'string'
        ? json(400, { error: issued, error_description: 'The authorization code is invalid' })
        : json(200, tokenAnswer(ctx, issued));
    }
    case 'pagerduty POST /oauth/revoke':
      state.refreshTokens.delete(form.get('token') ?? '');
      state.validTokens.delete(form.get('token') ?? '');
      return json(200, {});
    case 'slack POST /api/auth.revoke': {
      const token = bearer(req);
      if (!token || !state.validTokens.delete(token)) return json(200, { ok: false, error: 'invalid_auth' });
      return json(200, { ok: true, revoked: true });
    }
    default:
      return false;
  }
  return true;
}

/** The APIs the actions and the test calls reach. Whether it answered. */
function apiRoute(ctx: Ctx, r: Exchange): boolean {
  const { req, res, json, body, path } = r;
  const { kind, state } = ctx;
  switch (`${kind} ${req.method} ${path}`) {
    case 'slack POST /api/chat.postMessage': {
      if (!state.validTokens.has(bearer(req) ?? '')) return json(200, { ok: false, error: 'invalid_auth' });
      const message = JSON.parse(body) as { channel: string; text: string };
      return json(200, {
        ok: true,
        channel: message.channel,
        ts: '1503435956.000247',
        message: {
          text: message.text,
          username: 'ecto1',
          bot_id: 'B123ABC456',
          type: 'message',
          subtype: 'bot_message',
          ts: '1503435956.000247',
        },
      });
    }
    case 'datadog GET /api/v1/validate':
      return req.headers['dd-api-key'] === state.goodKey
        ? json(200, { valid: true })
        : json(403, { errors: ['Forbidden'] });
    case 'opsgenie GET /v2/account':
      return req.headers.authorization === `GenieKey ${state.goodKey}`
        ? json(200, {
            data: {
              name: 'opsgenie',
              userCount: 1450,
              plan: { maxUserCount: 1500, name: 'Enterprise', isYearly: true },
            },
            took: 0.003,
            requestId: 'b9a6a5d0-2a1c-4e8a-9c65-3f0a1d7f9a11',
          })
        : json(401, {
            message: 'Could not authenticate',
            took: 0.0,
            requestId: '6c1d7b5e-0f3e-4f5b-8d7a-0e9b5a1c2d3e',
          });
  }
  const grant = /^\/applications\/([^/]+)\/grant$/.exec(path);
  if (kind === 'github' && req.method === 'DELETE' && grant) {
    const expected = Buffer.from(`${state.clientId}:${state.clientSecret}`).toString('base64');
    if (decodeURIComponent(grant[1]!) !== state.clientId || req.headers.authorization !== `Basic ${expected}`)
      return json(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
    state.validTokens.delete((JSON.parse(body) as { access_token: string }).access_token);
    res.writeHead(204);
    res.end();
    return true;
  }
  const issues = /^\/repos\/([^/]+)\/([^/]+)\/issues$/.exec(path);
  if (kind === 'github' && req.method === 'POST' && issues) {
    if (!state.validTokens.has(bearer(req) ?? ''))
      return json(401, {
        message: 'Bad credentials',
        documentation_url: 'https://docs.github.com/rest',
        status: '401',
      });
    const issue = JSON.parse(body) as { title: string; body?: string };
    return json(201, {
      id: 1,
      node_id: 'MDU6SXNzdWUx',
      url: `${state.url}/repos/${issues[1]}/${issues[2]}/issues/1347`,
      html_url: `https://github.com/${issues[1]}/${issues[2]}/issues/1347`,
      number: 1347,
      state: 'open',
      title: issue.title,
      body: issue.body ?? null,
    });
  }
  const notes = /^\/incidents\/([^/]+)\/notes$/.exec(path);
  if (kind === 'pagerduty' && req.method === 'POST' && notes) {
    if (!state.validTokens.has(bearer(req) ?? '')) return json(401, { error: { message: 'Unauthorized', code: 2006 } });
    const note = JSON.parse(body) as { note: { content: string } };
    return json(201, {
      note: {
        id: 'PWL7QXS',
        user: { id: 'PXPGF42', type: 'user_reference', summary: 'Earline Greenholt' },
        channel: { summary: 'The PagerDuty website or APIs' },
        content: note.note.content,
        created_at: '2026-11-27T17:03:00-05:00',
      },
    });
  }
  return false;
}

export async function startProviderServer(kind: ProviderKind): Promise<ProviderServer> {
  const codes = new Map<string, IssuedCode>();
  const state: ProviderServer = {
    url: '',
    kind,
    clientId: kind === 'slack' ? '2141029472.691202649728' : `client-${kind}-${random(6)}`,
    clientSecret: `secret-${kind}-${random(12)}`,
    received: [],
    hits: (path) => state.received.filter((r) => r.path === path),
    validTokens: new Set(),
    refreshTokens: new Set(),
    expiresIn: 864_000,
    denyNext: false,
    refreshDelayMs: 0,
    goodKey: kind === 'opsgenie' ? 'eb243592-faa2-4ba2-a551q-1afdf565c889' : random(16),
    close: async () => undefined,
  };

  const ctx: Ctx = { kind, state, codes };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://provider.test');
      const body = Buffer.concat(chunks).toString('utf8');
      state.received.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      });
      const json = (status: number, value: unknown): true => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(value));
        return true;
      };
      const form = new URLSearchParams(req.headers['content-type']?.includes('json') ? '' : body);
      const exchange: Exchange = { req, url, res, body, form, path: url.pathname, json };
      if (!oauthRoute(ctx, exchange) && !apiRoute(ctx, exchange)) json(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return state;
}

/**
 * The browser's part of connecting an oauth2 provider: GET the connect URL with an admin token,
 * follow it to the provider's authorize page (which approves), and GET our callback with what
 * the provider sent back. Returns the callback's path and answer.
 */
export async function connectThroughBrowser(
  svc: { baseUrl: string; api: (method: string, path: string) => Promise<{ status: number; body: any }> },
  provider: string,
  token: string,
): Promise<{ callbackPath: string; start: Response; res: { status: number; body: any } }> {
  const start = await fetch(`${svc.baseUrl}/v1/integrations/connect/${provider}`, {
    headers: { authorization: `Bearer ${token}` },
    redirect: 'manual',
  });
  if (start.status !== 302) throw new Error(`connect answered ${start.status}: ${await start.text()}`);
  const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(authorize.headers.get('location')!);
  const callbackPath = `${back.pathname}${back.search}`;
  return { callbackPath, start, res: await svc.api('GET', callbackPath) };
}
