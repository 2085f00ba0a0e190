import type { Context, MiddlewareHandler } from 'hono';
import { AppError } from '../../errors.js';
import { assertJsonDepth, assertStorableJson, SUSPECT_ESCAPE } from '../../domain/json-text.js';
import type { AppEnv } from '../context.js';

/**
 * For every JSON request body (its nesting depth and text), and every URL: a `%00` in the path
 * or query decodes to NUL in a parameter. Webhooks read their raw body themselves and check it where they parse it.
 * A JWT route checks its input in its own middleware (`access`), once the caller's role is judged.
 */
export function storableText(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await assertStorableInput(c);
    return next();
  };
}

/** Throws 400 `validation_error` for a URL holding `%00` or a JSON body with unstorable text. */
export async function assertStorableInput(c: Context): Promise<void> {
  if (/%00/.test(c.req.url)) {
    throw new AppError('validation_error', 'The URL must not contain a NUL character (%00)', [
      { path: 'url', message: 'must not contain %00' },
    ]);
  }
  const type = c.req.header('content-type') ?? '';
  if (!c.req.path.startsWith('/v1/webhooks/') && /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type)) {
    const text = await c.req.text();
    assertJsonDepth(text);
    if (SUSPECT_ESCAPE.test(text)) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return; // malformed: the route's validator answers it
      }
      assertStorableJson(text, value);
    }
  }
}
