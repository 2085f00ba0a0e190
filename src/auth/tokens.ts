import { createSecretKey } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import jwt from 'jsonwebtoken';
import { z } from 'zod';

export const TOKEN_ISSUER = 'incident-service';
export const TOKEN_AUDIENCE = 'incident-service-api';
export const roles = ['admin', 'member'] as const;
export type Role = (typeof roles)[number];

/** Text a claim may hold: what a user id or an email address is made of, no control characters (a NUL cannot be stored). */
const claimText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((text) => !/\p{Cc}/u.test(text), 'must not hold control characters');

const claimsSchema = z.object({
  sub: claimText(256),
  email: claimText(320).optional(),
  tenant_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  roles: z.array(z.string().max(100)).max(50),
});

export interface Principal {
  userId: string;
  email: string | undefined;
  tenantId: string;
  roles: Role[];
  /** When the credential stops being valid (a JWT's `exp`, a stream token's expiry): a stream ends there. */
  expiresAt?: Date;
}

/** The longest lifetime (`exp` - `iat`) a token may claim, by default (`JWT_MAX_LIFETIME_SECONDS`). */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400;
/** How far ahead of ours an issuer's clock may be (`iat`, `nbf`), by default (`JWT_CLOCK_SKEW_SECONDS`). */
export const DEFAULT_CLOCK_SKEW_SECONDS = 60;

export interface TokenVerifier {
  /** Resolves the principal, or rejects when the token is not acceptable for any reason. */
  verify(token: string): Promise<Principal>;
}

export function signToken(args: {
  secret: string;
  tenantId: string;
  role: Role;
  sub: string;
  email?: string;
  ttlSeconds: number;
}): string {
  return jwt.sign(
    { tenant_id: args.tenantId, roles: [args.role], ...(args.email ? { email: args.email } : {}) },
    args.secret,
    {
      algorithm: 'HS256',
      subject: args.sub,
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      expiresIn: args.ttlSeconds,
    },
  );
}

function toPrincipal(payload: unknown, exp: number): Principal {
  const claims = claimsSchema.parse(payload);
  return {
    userId: claims.sub,
    email: claims.email,
    tenantId: claims.tenant_id,
    roles: claims.roles.filter((r): r is Role => (roles as readonly string[]).includes(r)),
    expiresAt: new Date(exp * 1000),
  };
}

/**
 * The time claims, the same for both algorithms (the libraries were given the skew as their
 * tolerance, which they apply to `exp` too): not expired, with no tolerance; issued no further
 * ahead than the skew; living no longer than the maximum. A token without `iat` counts as issued
 * now, so it may not stay valid for longer than the maximum from now. Returns `exp`.
 */
function checkTimes(
  payload: { exp?: unknown; iat?: unknown },
  bounds: { maxLifetimeSeconds: number; clockSkewSeconds: number },
): number {
  const { exp, iat } = payload;
  if (typeof exp !== 'number') throw new Error('token has no expiry');
  if (iat !== undefined && typeof iat !== 'number') throw new Error('token iat is not a number');
  const now = Date.now() / 1000;
  if (exp <= now) throw new Error('token expired');
  if (iat !== undefined && iat > now + bounds.clockSkewSeconds) throw new Error('token issued in the future');
  if (exp - (iat ?? now) > bounds.maxLifetimeSeconds)
    throw new Error(`token lifetime over ${bounds.maxLifetimeSeconds} s`);
  return exp;
}

/**
 * HS256 tokens signed with the configured secret and, when a JWKS URL is configured, RS256
 * tokens from an external identity provider. `iss`, `aud` and `exp` are always checked and only
 * these two algorithms are ever accepted (never `none`); the lifetime and the issuer's clock are
 * bounded (`checkTimes`).
 */
export function createTokenVerifier(options: {
  jwtSecret?: string | undefined;
  jwksUrl?: string | undefined;
  maxLifetimeSeconds?: number;
  clockSkewSeconds?: number;
}): TokenVerifier {
  const bounds = {
    maxLifetimeSeconds: options.maxLifetimeSeconds ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
    clockSkewSeconds: options.clockSkewSeconds ?? DEFAULT_CLOCK_SKEW_SECONDS,
  };
  // One KeyObject for the process: given a string, jsonwebtoken rebuilds (and first tries to
  // parse as a public key) the key on every verification, which dominated the request's CPU.
  const hmacKey = options.jwtSecret ? createSecretKey(Buffer.from(options.jwtSecret, 'utf8')) : undefined;
  const jwks = options.jwksUrl
    ? createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 })
    : undefined;
  return {
    async verify(token) {
      const header = jwt.decode(token, { complete: true })?.header;
      if (!header) throw new Error('malformed token');
      if (header.alg === 'HS256' && hmacKey) {
        const payload = jwt.verify(token, hmacKey, {
          algorithms: ['HS256'],
          issuer: TOKEN_ISSUER,
          audience: TOKEN_AUDIENCE,
          clockTolerance: bounds.clockSkewSeconds,
        });
        if (typeof payload === 'string') throw new Error('token has no claims');
        return toPrincipal(payload, checkTimes(payload, bounds));
      }
      if (header.alg === 'RS256' && jwks) {
        const { payload } = await jwtVerify(token, jwks, {
          algorithms: ['RS256'],
          issuer: TOKEN_ISSUER,
          audience: TOKEN_AUDIENCE,
          requiredClaims: ['exp', 'sub'],
          clockTolerance: bounds.clockSkewSeconds,
        });
        return toPrincipal(payload, checkTimes(payload, bounds));
      }
      throw new Error(`unsupported token algorithm ${String(header.alg)}`);
    },
  };
}
