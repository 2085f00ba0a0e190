/**
 * Skill input schemas are JSON Schemas written by tenants: compiled with ajv (draft-07, or
 * 2020-12 when `$schema` names it), strict about unknown keywords and formats, never loading
 * remote `$ref`s, bounded in size and depth, their `pattern`s matched in linear time. Compiled
 * validators are cached by schema text.
 */
import { Ajv, type AnySchemaObject, type ErrorObject, type Format, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { RE2JS } from 're2js';

export const MAX_INPUT_SCHEMA_BYTES = 32 * 1024;
export const MAX_INPUT_SCHEMA_DEPTH = 32;
export const MAX_INPUT_BYTES = 256 * 1024;

export interface SchemaProblem {
  path: string;
  message: string;
}

const DRAFT_2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const SUPPORTED_DRAFT = /^https?:\/\/json-schema\.org\/(draft-07\/schema|draft\/2020-12\/schema)#?$/;

/**
 * `pattern` and `patternProperties` run on RE2 (re2js), which matches in time linear in the
 * input, instead of a backtracking `RegExp`: a tenant's `^(a+)+$` against 40 characters would
 * hold the api's or the worker's event loop for hours (ADR 0163). RE2 has no lookaround or
 * backreferences; a schema using them does not compile, and is refused when it is written.
 */
const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(pattern);
    } catch (err) {
      throw new Error(
        `pattern ${JSON.stringify(pattern)} is not supported (patterns are matched by RE2: no lookaround, no backreferences): ${(err as Error).message}`,
      );
    }
    return { test: (text: string) => re.test(text), toString: () => `re2:${pattern}` };
  },
  { code: 'linearRegExp' },
);

/** A string check that gives up on text longer than `max` (numbers and other types pass through). */
function bounded(max: number, test: (text: string) => boolean): (value: unknown) => boolean {
  return (value) => typeof value !== 'string' || (value.length <= max && test(value));
}

/** `source` matched by RE2 (linear in the input). */
function re2(source: string, flags = ''): (text: string) => boolean {
  const re = RE2JS.compile(source, flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
  return (text) => re.test(text);
}

/** An absolute URL the WHATWG parser reads (linear in its length), with one of `schemes` when given. */
function parsedUrl(schemes?: string[]): (text: string) => boolean {
  return (text) => {
    // eslint-disable-next-line no-control-regex -- control characters are what it refuses
    if (/[\s\u0000-\u001f\u007f]|%(?![0-9a-f]{2})/i.test(text) || !/^[a-z][a-z0-9+.-]*:/i.test(text)) return false;
    try {
      const url = new URL(text);
      return !schemes || (schemes.includes(url.protocol) && url.hostname !== '');
    } catch {
      return false;
    }
  };
}

/**
 * The string formats of ajv-formats, each in time linear in its input, or bounded to the longest
 * value the format allows. ajv-formats matches with backtracking regular expressions, and some
 * take quadratic time on crafted text: a 120 KB `url` held the event loop 13 s, for every tenant
 * of the process (ADR 0211). Here: the formats RE2 can run go through RE2; `url` and `uri`
 * are read by the WHATWG URL parser; the rest (with lookarounds) get at most the length their
 * values can have (a hostname 253 characters, a date-time 64), so even a quadratic check is
 * short. Numeric formats are unchanged.
 */
function linearFormatTable(): Record<string, Format> {
  const scratch = new Ajv();
  formats.default(scratch);
  const known = scratch.formats as Record<string, unknown>;
  const table: Record<string, Format> = {};
  const redefine = (name: string, validate: (value: unknown) => boolean) => {
    const current = known[name];
    const compare =
      current && typeof current === 'object' && 'compare' in current
        ? (current as { compare: unknown }).compare
        : undefined;
    table[name] = compare ? ({ validate, compare } as never) : validate;
  };
  for (const [name, format] of Object.entries(known)) {
    const regexp =
      format instanceof RegExp
        ? format
        : format && typeof format === 'object' && (format as { validate?: unknown }).validate instanceof RegExp
          ? (format as { validate: RegExp }).validate
          : undefined;
    if (!regexp) continue;
    try {
      redefine(name, bounded(MAX_INPUT_BYTES, re2(regexp.source, regexp.flags)));
    } catch {
      // Lookarounds: RE2 cannot run it; the original, on at most what such a value can hold.
      redefine(
        name,
        bounded(name === 'hostname' ? 253 : 256, (text) => regexp.test(text)),
      );
    }
  }
  const call = (name: string) => {
    const format = known[name];
    const fn = typeof format === 'function' ? format : (format as { validate: (text: string) => boolean }).validate;
    return (text: string) => fn(text);
  };
  for (const name of ['date', 'time', 'date-time', 'iso-time', 'iso-date-time'])
    redefine(name, bounded(64, call(name)));
  redefine('regex', bounded(4096, call('regex')));
  redefine('byte', bounded(MAX_INPUT_BYTES, re2('^(?:[a-z0-9+/]{4})*(?:[a-z0-9+/]{2}==|[a-z0-9+/]{3}=)?$', 'i')));
  redefine('url', bounded(MAX_INPUT_BYTES, parsedUrl(['http:', 'https:', 'ftp:'])));
  redefine('uri', bounded(MAX_INPUT_BYTES, parsedUrl()));
  return table;
}

/** Built once per process (RE2 compiles each expression), then given to every schema's ajv. */
let linearFormats: Record<string, Format> | undefined;

function addLinearFormats(ajv: Ajv): void {
  formats.default(ajv);
  linearFormats ??= linearFormatTable();
  for (const [name, format] of Object.entries(linearFormats)) ajv.addFormat(name, format);
}

/**
 * `uniqueItems` compares every pair of items when they are objects or arrays: 20,000 of them
 * took 4 s. A schema that asks for it must bound the array with `maxItems` (ADR 0211).
 */
export const MAX_UNIQUE_ITEMS = 1000;

/** Keywords whose value maps names to schemas (the map itself is not a schema). */
const SCHEMA_MAPS = new Set([
  'properties',
  'patternProperties',
  'definitions',
  '$defs',
  'dependentSchemas',
  'dependencies',
]);

function unboundedUniqueItems(schema: unknown, at = '', isMap = false): SchemaProblem | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const node = schema as Record<string, unknown>;
  if (
    !isMap &&
    !Array.isArray(schema) &&
    node.uniqueItems === true &&
    !(typeof node.maxItems === 'number' && node.maxItems <= MAX_UNIQUE_ITEMS)
  ) {
    return {
      path: at || '/',
      message: `uniqueItems needs maxItems of at most ${MAX_UNIQUE_ITEMS} (checking uniqueness compares every pair of items)`,
    };
  }
  for (const [key, child] of Object.entries(node)) {
    const found = unboundedUniqueItems(child, `${at}/${key}`, !isMap && !Array.isArray(schema) && SCHEMA_MAPS.has(key));
    if (found) return found;
  }
  return undefined;
}

function newAjv(schema: AnySchemaObject): Ajv {
  const options = {
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    logger: false,
    code: { regExp: linearRegExp },
  } as const;
  const ajv =
    typeof schema.$schema === 'string' && DRAFT_2020.test(schema.$schema) ? new Ajv2020(options) : new Ajv(options);
  addLinearFormats(ajv);
  return ajv;
}

function depthOf(value: unknown, limit: number, depth = 0): number {
  if (depth > limit || value === null || typeof value !== 'object') return depth;
  let max = depth;
  for (const child of Object.values(value)) {
    max = Math.max(max, depthOf(child, limit, depth + 1));
    if (max > limit) break;
  }
  return max;
}

function toProblems(errors: ErrorObject[] | null | undefined): SchemaProblem[] {
  return (errors ?? []).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
    return { path: e.instancePath || '/', message: `${e.message ?? e.keyword}${extra}` };
  });
}

const cache = new Map<string, ValidateFunction>();
const CACHE_LIMIT = 500;

function compile(schema: AnySchemaObject): ValidateFunction {
  const text = JSON.stringify(schema);
  const cached = cache.get(text);
  if (cached) return cached;
  const unbounded = unboundedUniqueItems(schema);
  if (unbounded) throw new Error(`${unbounded.path} ${unbounded.message}`);
  // One ajv instance per schema: `$id`s registered by one tenant's schema never meet another's.
  const validate = newAjv(schema).compile(schema);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(text, validate);
  return validate;
}

/** Problems that make `schema` unusable as a skill's input schema; empty when it is valid. */
export function checkInputSchema(schema: Record<string, unknown>): SchemaProblem[] {
  if (Buffer.byteLength(JSON.stringify(schema)) > MAX_INPUT_SCHEMA_BYTES) {
    return [{ path: '/', message: `must be at most ${MAX_INPUT_SCHEMA_BYTES / 1024} KiB of JSON` }];
  }
  if (depthOf(schema, MAX_INPUT_SCHEMA_DEPTH) > MAX_INPUT_SCHEMA_DEPTH) {
    return [{ path: '/', message: `must be nested at most ${MAX_INPUT_SCHEMA_DEPTH} levels deep` }];
  }
  if (schema.$schema !== undefined && (typeof schema.$schema !== 'string' || !SUPPORTED_DRAFT.test(schema.$schema))) {
    return [{ path: '/$schema', message: 'only JSON Schema draft-07 and 2020-12 are supported' }];
  }
  const ajv = newAjv(schema);
  if (!ajv.validateSchema(schema)) {
    return toProblems(ajv.errors);
  }
  const unbounded = unboundedUniqueItems(schema);
  if (unbounded) return [unbounded];
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (err) {
    return [{ path: '/', message: isEndless(err) ? ENDLESS : (err as Error).message }];
  }
  // A `$ref` that leads back to where it started without reading any of the input (`{"$ref":"#"}`)
  // validates nothing for ever: tried on the plainest inputs, it overflows the stack.
  try {
    for (const sample of [{}, [], null, 0, '', true]) validate(sample);
  } catch (err) {
    if (isEndless(err)) return [{ path: '/', message: ENDLESS }];
    throw err;
  }
  return [];
}

const ENDLESS = 'refers to itself ($ref) without reading the input, so validating would never end';

/** The stack overflow of a validator that recurses without end. */
const isEndless = (err: unknown) => err instanceof RangeError && /call stack/i.test(err.message);

/** Problems of `input` against the skill's input schema (none when the skill has no schema). */
export function checkInput(schema: Record<string, unknown> | null, input: unknown): SchemaProblem[] {
  if (input === undefined || Buffer.byteLength(JSON.stringify(input)) > MAX_INPUT_BYTES) {
    return [{ path: '/', message: `input must be JSON of at most ${MAX_INPUT_BYTES / 1024} KiB` }];
  }
  if (!schema) return [];
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (err) {
    // A schema stored before a rule it breaks (such as RE2's patterns) was added.
    return [{ path: '/', message: `the skill's input schema does not compile: ${(err as Error).message}` }];
  }
  try {
    return validate(input) ? [] : toProblems(validate.errors);
  } catch (err) {
    // A cycle that only this input's shape reaches (a schema stored before the check above).
    if (isEndless(err)) return [{ path: '/', message: `the skill's input schema ${ENDLESS}` }];
    throw err;
  }
}

/** One line naming each problem, for messages. */
export function describeProblems(problems: SchemaProblem[]): string {
  return problems.map((p) => `${p.path} ${p.message}`).join('; ');
}
