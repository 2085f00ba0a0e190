/**
 * Skill input schemas' string formats (decision 211): the same verdicts as the JSON Schema
 * formats, each reached in time linear in the input or on a bounded length.
 */
import { describe, expect, it } from 'vitest';
import { checkInput, checkInputSchema } from '../../src/skills/json-schema.js';

const verdict = (format: string, value: unknown) =>
  checkInput({ type: 'object', properties: { v: { format } } }, { v: value }).length === 0;

describe('skill input formats', () => {
  it.each([
    ['url', 'https://example.com/path?q=1#top', true],
    ['url', 'ftp://files.example.com/a.txt', true],
    ['url', 'mailto:someone@example.com', false],
    ['url', 'https://exa mple.com', false],
    ['url', 'not a url', false],
    ['uri', 'urn:isbn:0451450523', true],
    ['uri', 'https://example.com/a b', false],
    ['uri', '/relative/path', false],
    ['uri-reference', '/relative/path', true],
    ['email', 'oncall@example.com', true],
    ['email', 'not-an-email', false],
    ['hostname', 'db-1.eu-west-1.example.com', true],
    ['hostname', '-bad-.example.com', false],
    ['hostname', `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(70)}`, false],
    ['ipv4', '10.0.0.1', true],
    ['ipv4', '10.0.0.256', false],
    ['ipv6', '2001:db8::1', true],
    ['uuid', '3f2504e0-4f89-11d3-9a0c-0305e82c3301', true],
    ['uuid', '3f2504e0', false],
    ['date', '2026-11-23', true],
    ['date', '2026-02-30', false],
    ['date-time', '2026-11-23T03:10:00Z', true],
    ['date-time', '2026-11-23 03:10', false],
    ['duration', 'P1DT2H', true],
    ['duration', 'P', false],
    ['byte', 'aGVsbG8=', true],
    ['byte', 'not base64!', false],
    ['int32', 42, true],
    ['int32', 2 ** 40, false],
  ])('%s %j → %s', (format, value, expected) => {
    expect(verdict(format, value)).toBe(expected);
  });

  it('answers crafted long text in linear time', () => {
    const started = performance.now();
    expect(verdict('url', `http://${':@'.repeat(120_000)}`)).toBe(false);
    expect(verdict('uri', `a:${'%'.repeat(200_000)}`)).toBe(false);
    expect(verdict('hostname', 'a'.repeat(200_000))).toBe(false);
    expect(verdict('email', `${'a.'.repeat(100_000)}@`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('refuses uniqueItems without a maxItems of at most 1000, but not a property named uniqueItems', () => {
    expect(checkInputSchema({ type: 'array', uniqueItems: true })).toEqual([
      {
        path: '/',
        message: 'uniqueItems needs maxItems of at most 1000 (checking uniqueness compares every pair of items)',
      },
    ]);
    expect(checkInputSchema({ type: 'array', uniqueItems: true, maxItems: 1000 })).toEqual([]);
    expect(checkInputSchema({ type: 'object', properties: { uniqueItems: { type: 'boolean' } } })).toEqual([]);
    // A schema stored before the rule fails cleanly when an input is checked.
    expect(checkInput({ type: 'array', uniqueItems: true }, [{ a: 1 }])[0]!.message).toMatch(
      /^the skill's input schema does not compile: \/ uniqueItems needs maxItems/,
    );
  });
});
