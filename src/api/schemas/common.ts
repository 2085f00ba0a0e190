import { z } from '@hono/zod-openapi';
import { hasVisibleText } from '../../domain/text.js';

export const ErrorSchema = z
  .object({
    error: z.string().openapi({ example: 'validation_error' }),
    message: z.string(),
    details: z.unknown().optional(),
  })
  .openapi('Error');

export function errorResponses(...statuses: Array<400 | 401 | 403 | 404 | 409 | 413 | 429 | 502 | 503>) {
  const descriptions: Record<number, string> = {
    400: 'Invalid input',
    401: 'Missing, invalid or expired credentials',
    403: 'The caller lacks the required role',
    404: 'Not found',
    409: 'Conflict',
    413: 'Request body over 1 MiB (a webhook: 4 MiB)',
    429: 'Rate limit or quota exceeded',
    502: 'A sign-in or integration provider did not answer as it should',
    503: 'A dependency is unavailable',
  };
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: descriptions[s]!, content: { 'application/json': { schema: ErrorSchema } } },
    ]),
  );
}

/** An OpenAPI response with a JSON body of `schema`. */
export const jsonResponse = <T>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** Query booleans arrive as strings. */
export const queryBoolean = z.enum(['true', 'false']).transform((v) => v === 'true');

/**
 * A page size: decimal digits only (`Number()` alone would take `0x10`, `1e1`, ` 5` or `5.0`),
 * then 1 to `max`.
 */
export const limitParam = (defaultLimit: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,9}$/, 'Expected a whole number written in decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(1).max(max))
    .default(defaultLimit)
    .openapi({
      param: { name: 'limit', in: 'query' },
      type: 'integer',
      minimum: 1,
      maximum: max,
      default: defaultLimit,
      example: defaultLimit,
    });

// eslint-disable-next-line no-control-regex
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f-\u009f]*$/;

/**
 * A one-line label (a title, a name, a team): trimmed, 1 to `max` characters, with no control
 * character (C0, DEL, C1: a newline, a tab, an ANSI escape). Such a label is shown in lists,
 * notifications, terminals and log lines, where a control character forges or garbles a line.
 */
export const oneLine = (max: number, requiredMessage?: string) =>
  z
    .string()
    .trim()
    .min(1, requiredMessage)
    .max(max)
    // No `u` flag: the published OpenAPI pattern is the regex's source, and a flag does not
    // survive there (`^\P{Cc}*$/u` matched nothing); this class is the same set, C0, DEL and C1.
    .regex(NO_CONTROL_CHARACTERS, 'must be one line without control characters')
    .refine(visibleOrEmpty, requiredMessage ?? 'must not be blank');

/** For a refinement after a length check: empty text is that check's to refuse. */
export const visibleOrEmpty = (text: string): boolean => text.length === 0 || hasVisibleText(text);
