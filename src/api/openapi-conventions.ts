/**
 * What every operation of the api answers besides its own responses, added to the published
 * OpenAPI document in one place rather than repeated on each route: each route
 * states the answers that are its own (its 400 body rules, 404, 409, quota 429), and these are
 * the service's:
 * - every route but the health probes is rate limited: 429 `rate_limit_exceeded` with
 *   `Retry-After`; every answer, the probes' too, carries the `X-RateLimit-*` headers;
 * - every route but the health probes reads PostgreSQL (its rate-limit window at least), so it
 *   may answer 503 `service_unavailable` with `Retry-After`;
 * - a route that takes a body answers 413 `payload_too_large` past the body limit;
 * - a route with path parameters answers 400 `validation_error` for one out of its bounds;
 * - a webhook's body, which its handler reads raw, is described.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';

type OpenAPIObject = ReturnType<OpenAPIHono['getOpenAPI31Document']>;
interface ReferenceObject {
  $ref: string;
}
interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
}
interface OperationObject {
  parameters?: Array<{ in?: string } | ReferenceObject>;
  requestBody?: unknown;
  responses?: Record<string, ResponseObject | ReferenceObject>;
}

/** Routes that are not rate limited (their window is shown, not enforced) and read nothing. */
const UNLIMITED_PATHS = new Set(['/health', '/health/detailed']);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const errorResponse = (description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': headerRef('RateLimitLimit'),
  'X-RateLimit-Remaining': headerRef('RateLimitRemaining'),
  'X-RateLimit-Reset': headerRef('RateLimitReset'),
};

export function withResponseConventions(doc: OpenAPIObject): OpenAPIObject {
  doc.components ??= {};
  doc.components.headers = {
    ...doc.components.headers,
    RateLimitLimit: { description: 'Requests allowed in the current one-minute window', schema: { type: 'integer' } },
    RateLimitRemaining: { description: 'Requests left in the current window', schema: { type: 'integer' } },
    RateLimitReset: { description: 'When the current window ends (Unix time, seconds)', schema: { type: 'integer' } },
    RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  };
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (item as Record<string, OperationObject | undefined>)[method];
      if (!operation) continue;
      const responses = (operation.responses ??= {});
      const add = (status: string, response: ResponseObject) => {
        responses[status] ??= response;
      };
      const parameters = operation.parameters ?? [];
      if (parameters.some((p) => 'in' in p && p.in === 'path'))
        add('400', errorResponse('Invalid input (a path parameter out of its bounds, among others)'));
      if (path.startsWith('/v1/webhooks/')) {
        // The handler reads the raw body itself (for the signature), so the route declares none.
        operation.requestBody ??= {
          required: true,
          description:
            "The tool's own payload, as it sends it (see the operation's description and the README's provider table)",
          content: {
            'application/json': { schema: { type: 'object' } },
            'application/x-www-form-urlencoded': { schema: { type: 'object' } },
          },
        };
      }
      if (operation.requestBody) {
        add(
          '413',
          errorResponse(path.startsWith('/v1/webhooks/') ? 'Request body over 4 MiB' : 'Request body over 1 MiB'),
        );
      }
      const limited = !UNLIMITED_PATHS.has(path);
      if (limited) {
        add(
          '429',
          errorResponse('Rate limit exceeded (`rate_limit_exceeded`), or a quota where the operation says so'),
        );
        add(
          '503',
          errorResponse(
            'A dependency (PostgreSQL, or Temporal where the operation needs it) is unavailable; retry after Retry-After',
          ),
        );
      }
      for (const [status, response] of Object.entries(responses)) {
        if ('$ref' in response) continue;
        const retry = limited && (status === '429' || status === '503');
        response.headers = {
          ...RATE_LIMIT_HEADERS,
          ...(retry ? { 'Retry-After': headerRef('RetryAfter') } : {}),
          ...response.headers,
        };
      }
    }
  }
  return doc;
}
