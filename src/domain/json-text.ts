import { AppError } from '../errors.js';

/**
 * PostgreSQL stores no NUL character (in `text` or `jsonb`) and no unpaired UTF-16 surrogate (in
 * `jsonb`); such a value failed its statement, and the caller got a 500 (a monitoring tool then
 * retried the delivery for ever). They are refused up front instead, as 400 `validation_error`
 * naming where they are. JSON can carry either only as a `\u` escape (a raw
 * control character is malformed JSON, and invalid UTF-8 decodes to U+FFFD), so a body whose
 * text holds no such escape is not walked at all.
 */
export const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f])/i;

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
  assertJsonBounds(text, { depth: MAX_JSON_DEPTH });
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
 * refused the whole notification, and the tool sent it again and again (ADR 0217).
 */
export function storableCopy(value: unknown): unknown {
  if (typeof value === 'string') return textProblem(value) ? storableString(value) : value;
  if (Array.isArray(value)) return value.map(storableCopy);
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value))
      copy[textProblem(key) ? storableString(key) : key] = storableCopy(child);
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
 * What one JSON body may hold, judged on its text before `JSON.parse`: parsing an object of
 * 250,000 keys alone took a second of the event loop, and a provider's parse of it 1.7 s more
 * (ADR 0252). Real payloads stay far inside: an Alertmanager group of 500 alerts with 40 labels
 * and annotations each has about 25,000 keys.
 */
export interface JsonBounds {
  /** Arrays and objects nested in one another. */
  depth: number;
  /** Keys of one object. */
  keysPerObject?: number;
  /** Keys of one `labels` or `annotations` object (an alert's, a group's common ones). */
  labelsPerObject?: number;
  /** Keys of every object together. */
  totalKeys?: number;
  /** Characters of one string (as written in the JSON text, escapes included). */
  stringLength?: number;
}

export const WEBHOOK_JSON_BOUNDS: Required<JsonBounds> = {
  depth: MAX_JSON_DEPTH,
  keysPerObject: 1000,
  labelsPerObject: 256,
  totalKeys: 100_000,
  stringLength: 256 * 1024,
};

const LABEL_OBJECT = /^(?:common|group)?(?:labels|annotations)$/i;

interface Level {
  object: boolean;
  /** The key this container sits under (its parent's key or index), for the error's path. */
  name: string;
  keys: number;
  index: number;
  labels: boolean;
  /** An object's next string is a key (after `{` or `,`). */
  expectKey: boolean;
  /** The last key read in this object. */
  key: string;
}

function refuse(path: string, message: string): never {
  throw new AppError('validation_error', `${path ? `${path}: ` : 'The JSON body '}${message}`, [
    { path: path || 'body', message },
  ]);
}

/** Where the innermost container is, from the body down (the body itself is stack[1]). */
function pathOf(stack: Level[]): string {
  const names: string[] = [];
  for (let i = 2; i < stack.length; i++) names.push(stack[i]!.name);
  return names.join('.');
}

/**
 * Throws 400 `validation_error` naming the bound and where it was passed, when the JSON `text`
 * goes past one of `bounds`. One pass over the characters; malformed JSON is left to the parser.
 */
export function assertJsonBounds(text: string, bounds: JsonBounds): void {
  const stack: Level[] = [{ object: false, name: '', keys: 0, index: 0, labels: false, expectKey: false, key: '' }];
  let totalKeys = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    const top = stack[stack.length - 1]!;
    if (ch === 0x22) {
      const start = i + 1;
      for (i = start; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x5c)
          i++; // a backslash escapes the next character
        else if (c === 0x22) break;
      }
      const length = i - start;
      if (top.object && top.expectKey) {
        top.expectKey = false;
        top.key = text.slice(start, Math.min(i, start + 100));
        if (bounds.keysPerObject !== undefined && ++top.keys > bounds.keysPerObject) {
          refuse(pathOf(stack), `has an object with more than ${bounds.keysPerObject} keys`);
        }
        if (top.labels && bounds.labelsPerObject !== undefined && top.keys > bounds.labelsPerObject) {
          refuse(pathOf(stack), `has more than ${bounds.labelsPerObject} labels or annotations`);
        }
        if (bounds.totalKeys !== undefined && ++totalKeys > bounds.totalKeys) {
          refuse('', `has more than ${bounds.totalKeys} keys in all`);
        }
      }
      if (bounds.stringLength !== undefined && length > bounds.stringLength) {
        const where = top.object ? [pathOf(stack), top.key].filter(Boolean).join('.') : pathOf(stack);
        refuse(where, `has a string longer than ${bounds.stringLength} characters`);
      }
    } else if (ch === 0x7b || ch === 0x5b) {
      if (stack.length > bounds.depth) refuse('', `nests deeper than ${bounds.depth} levels`);
      const name = top.object ? top.key : String(top.index);
      const object = ch === 0x7b;
      stack.push({
        object,
        name,
        keys: 0,
        index: 0,
        labels: object && LABEL_OBJECT.test(name),
        expectKey: object,
        key: '',
      });
    } else if (ch === 0x7d || ch === 0x5d) {
      if (stack.length > 1) stack.pop();
    } else if (ch === 0x2c) {
      if (top.object) top.expectKey = true;
      else top.index++;
    }
  }
}
