import { describe, expect, it } from 'vitest';
import { parseRunbookSteps } from '../../src/domain/runbooks.js';

const texts = (markdown: string) => parseRunbookSteps(markdown).map((s) => s.text);

describe('runbook steps', () => {
  it('numbers numbered list items from 1 in document order, whatever the markdown wrote', () => {
    expect(parseRunbookSteps('Intro line\n\n1. Check the pool\n1. Restart pgbouncer\n7) Scale down\n')).toEqual([
      { number: 1, text: 'Check the pool' },
      { number: 2, text: 'Restart pgbouncer' },
      { number: 3, text: 'Scale down' },
    ]);
  });

  it('prefers numbered items to bullets, and ignores nested items and continuation lines', () => {
    const markdown = [
      '## Symptoms',
      '- p99 above 2s',
      '## Mitigation',
      '1. Check `pg_stat_activity`',
      '   - look for idle in transaction',
      '    2. nested, not a step',
      '   continuation of step one',
      '2. Kill idle sessions',
    ].join('\n');
    expect(texts(markdown)).toEqual(['Check `pg_stat_activity`', 'Kill idle sessions']);
  });

  it('takes bullets and checkboxes when there is no numbered list, skipping thematic breaks', () => {
    expect(texts('- [ ] Drain the node\n* [x] Cordon it\n---\n+ Page the owner\n- - -\n')).toEqual([
      'Drain the node',
      'Cordon it',
      'Page the owner',
    ]);
  });

  it('takes "## Step N" headings over any list, with the first section line when the heading has no title', () => {
    const markdown = [
      '# Postgres connection exhaustion',
      '1. not a step: headings win',
      '## Step 1: Find the clients',
      '- query pg_stat_activity',
      '### Step 2 — Restart pgbouncer ###',
      '## Step 3',
      '',
      'Scale checkout-api down to 4 replicas.',
      '## Steps to avoid',
      '## Step-by-step notes',
    ].join('\n');
    expect(parseRunbookSteps(markdown)).toEqual([
      { number: 1, text: 'Find the clients' },
      { number: 2, text: 'Restart pgbouncer' },
      { number: 3, text: 'Scale checkout-api down to 4 replicas.' },
    ]);
  });

  it('ignores everything inside fenced code blocks', () => {
    const markdown = [
      '```sh',
      '1. echo not a step',
      '## Step 9: nor this',
      '```',
      '~~~',
      '- nor this',
      '~~~',
      '- the only step',
    ].join('\n');
    expect(texts(markdown)).toEqual(['the only step']);
  });

  it('has no steps in plain prose, and handles CRLF line ends', () => {
    expect(parseRunbookSteps('Call the database team.\nThen wait.')).toEqual([]);
    expect(texts('1. one\r\n2. two\r\n')).toEqual(['one', 'two']);
  });
});
