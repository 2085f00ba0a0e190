/**
 * Skill input schemas are JSON Schemas written by tenants: compiled with ajv (draft-07, or
 * 2020-12 when `$schema` names it), strict about unknown keywords and formats, never loading
 * remote `$ref`s, bounded in size and depth, their `pattern`s matched in linear time. Compiled
 * validators are cached by schema text.
 */
import { Ajv, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv';
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
 * hold the api's or the worker's event loop for hours (decision 163). RE2 has no lookaround or
 * backreferences; a schema using them does not compile, and is refused when it is written.
 */
const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(pattern);
    } catch (err) {
      throw new Error(`pattern ${JSON.stringify(pattern)} is not supported (patterns are matched by RE2: no lookaround, no backreferences): ${(err as Error).message}`);
    }
    return { test: (text: string) => re.test(text), toString: () => `re2:${pattern}` };
  },
  { code: 'linearRegExp' },
);

function newAjv(schema: AnySchemaObject): Ajv {
  const options = { allErrors: true, strict: true, strictTypes: false, strictTuples: false, logger: false, code: { regExp: linearRegExp } } as const;
  const ajv = typeof schema.$schema === 'string' && DRAFT_2020.test(schema.$schema) ? new Ajv2020(options) : new Ajv(options);
  formats.default(ajv);
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
