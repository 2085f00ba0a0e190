import type { Context, MiddlewareHandler } from 'hono';
import { AppError } from '../../errors.js';
import type { AppEnv } from '../context.js';

/**
 * PostgreSQL stores no NUL character (in `text` or `jsonb`) and no unpaired UTF-16 surrogate (in
 * `jsonb`); such a value failed its statement, and the caller got a 500 (a monitoring tool then
 * retried the delivery for ever). They are refused up front instead, as 400 `validation_error`
 * naming where they are (decision 167). JSON can carry either only as a `\u` escape (a raw
 * control character is malformed JSON, and invalid UTF-8 decodes to U+FFFD), so a body whose
 * text holds no such escape is not walked at all.
 */
const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f])/i;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textProblem(text: string): string | undefined {
  if (text.includes('\0')) return 'must not contain a NUL (\\u0000) character';
  if (LONE_SURROGATE.test(text)) return 'must not contain an unpaired UTF-16 surrogate';
  return undefined;
}

/** The first place in a parsed JSON value holding text PostgreSQL cannot store, if any. */
export function findUnstorableText(value: unknown): { path: string; message: string } | undefined {
  const stack: Array<[unknown, string[]]> = [[value, []]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = textProblem(item);
      if (problem) return { path: path.join('.'), message: problem };
    } else if (Array.isArray(item)) {
      item.forEach((child, index) => stack.push([child, [...path, String(index)]]));
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        const problem = textProblem(key);
        if (problem) return { path: [...path, key].join('.'), message: `key ${problem}` };
        stack.push([child, [...path, key]]);
      }
    }
  }
  return undefined;
}

/**
 * How deep arrays and objects may nest in a JSON body. Real payloads nest a dozen levels; a
 * body nested thousands deep (well under 1 MiB) made JSON.stringify and the validators
 * overflow the stack, a 500 that a monitoring tool retried for ever.
 */
export const MAX_JSON_DEPTH = 64;

/** Throws 400 `validation_error` when the JSON text nests arrays and objects deeper than MAX_JSON_DEPTH. */
export function assertJsonDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // a backslash escapes the next character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) {
        throw new AppError('validation_error', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, [{ path: 'body', message: `nests deeper than ${MAX_JSON_DEPTH} levels` }]);
      }
    } else if (ch === 0x7d || ch === 0x5d) {
      depth--;
    }
  }
}

const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** `text` with each NUL and each unpaired surrogate replaced by U+FFFD. */
function storableString(text: string): string {
  return text.replaceAll('\0', '\uFFFD').replace(LONE_SURROGATES, '\uFFFD');
}

/**
 * `value` with every string and key PostgreSQL cannot store made storable: each NUL and each
 * unpaired surrogate becomes U+FFFD, as invalid UTF-8 does when it is decoded. For what a
 * monitoring tool sends, which is kept rather than refused: refusing one alert's annotation
 * refused the whole notification, and the tool sent it again and again (decision 217).
 */
export function storableCopy(value: unknown): unknown {
  if (typeof value === 'string') return textProblem(value) ? storableString(value) : value;
  if (Array.isArray(value)) return value.map(storableCopy);
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) copy[textProblem(key) ? storableString(key) : key] = storableCopy(child);
    return copy;
  }
  return value;
}

/** `value` as `storableCopy` makes it, walked only when the JSON `text` holds a suspect escape. */
export function storableJson(text: string, value: unknown): unknown {
  return SUSPECT_ESCAPE.test(text) ? storableCopy(value) : value;
}

/** Throws 400 `validation_error` when the JSON `text` (parsed as `value`) holds unstorable text. */
export function assertStorableJson(text: string, value: unknown): void {
  if (!SUSPECT_ESCAPE.test(text)) return;
  const found = findUnstorableText(value);
  if (found) throw new AppError('validation_error', `${found.path || 'body'}: ${found.message}`, [found]);
}

/**
 * For every JSON request body (its nesting depth and text), and every URL: a `%00` in the path
 * or query decodes to NUL in a parameter. Webhooks read their raw body themselves and check it where they parse it.
 */
export function storableText(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    try {
      await check(c);
    } catch (err) {
      // A caller with a token is told once its role is judged (every JWT route's `access`).
      if (!(err instanceof AppError) || !c.get('auth')) throw err;
      c.set('deferredInputError', err);
    }
    return next();
  };
}

/** Throws 400 `validation_error` for a URL holding `%00` or a JSON body with unstorable text. */
async function check(c: Context<AppEnv>): Promise<void> {
  if (/%00/.test(c.req.url)) {
    throw new AppError('validation_error', 'The URL must not contain a NUL character (%00)', [{ path: 'url', message: 'must not contain %00' }]);
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
