import { describe, expect, it } from 'vitest';
import { analyzeQuestion, isBroad } from '../../src/assistant/intents.js';
import { correctTerms, recencyBoost } from '../../src/assistant/retrieval.js';
import {
  correctTypo,
  dedupeByGroup,
  editDistance,
  expandTerm,
  groupOf,
  normalizeQuestion,
  TERM_GROUPS,
} from '../../src/assistant/synonyms.js';

const now = new Date('2026-03-18T10:00:00.000Z');
const terms = (q: string) => analyzeQuestion(q, now).terms;

describe('the synonym table of the assistant', () => {
  it('expands abbreviations both ways within a group, and pg to the broader database words', () => {
    expect(expandTerm('db').words).toEqual(expect.arrayContaining(['database', 'db']));
    expect(expandTerm('database').words).toContain('db');
    expect(expandTerm('database').words).not.toContain('postgres');
    expect(expandTerm('pg').words).toEqual(expect.arrayContaining(['postgres', 'postgresql', 'database', 'db']));
    expect(expandTerm('k8s').words).toEqual(expect.arrayContaining(['kubernetes', 'kubelet', 'pod']));
    expect(expandTerm('svc').words).toContain('service');
    expect(expandTerm('msg').words).toContain('message');
    expect(expandTerm('oom').phrases).toContain('out of memory');
    expect(expandTerm('5xx').words).toEqual(expect.arrayContaining(['502', '503', '504']));
    expect(expandTerm('5xx').phrases).toContain('returned 500');
    // A word outside the table is searched as itself only.
    expect(expandTerm('ledger')).toEqual({ words: ['ledger'], phrases: [] });
  });

  it('lists every word in one group only, so a keyword has one meaning', () => {
    const seen = new Map<string, string>();
    for (const group of TERM_GROUPS)
      for (const word of [group.key, ...group.words]) {
        if (seen.has(word) && seen.get(word) !== group.key)
          throw new Error(`${word} in ${seen.get(word)} and ${group.key}`);
        seen.set(word, group.key);
      }
    expect(groupOf('conns')?.key).toBe('connection');
  });

  it('rewrites shorthand and phrases before reading the keywords', () => {
    expect(normalizeQuestion('whats going on w/ payments db conns')).toBe('whats going on with payments db conns');
    expect(normalizeQuestion('why did cart-service return 500s')).toBe('why did cart-service return 500');
    expect(normalizeQuestion('pods ran out of memory')).toBe('pods ran oom');
    expect(normalizeQuestion('Which incidents had 5xx errors?')).toBe('which incidents had 5xx ?');
    expect(normalizeQuestion('internal server errors on the cart')).toBe('5xx on the cart');
    expect(normalizeQuestion('node not ready')).toBe('node notready');
    expect(normalizeQuestion('search timing out')).toBe('search timeout');
    expect(normalizeQuestion('orders-api crash looping')).toBe('orders-api crashloop');
    expect(normalizeQuestion('too many clients on payments pg')).toBe('maxconn on payments pg');
    expect(normalizeQuestion('elasticsearch ran out of disk')).toBe('elasticsearch full disk');
    expect(normalizeQuestion("the gateway's cert")).toBe('the gateway cert');
  });

  it('keeps one keyword per group and reads the abbreviated question as the spelt-out one', () => {
    expect(dedupeByGroup(['ssl', 'cert', 'expiry'])).toEqual(['ssl', 'expiry']);
    expect(terms('ssl cert expiry outage')).toEqual(['ssl', 'expiry', 'outage']);
    expect(terms('k8s pods OOMKilled on inventory')).toEqual(['k8s', 'oom', 'inventory']);
    expect(terms('out of memory incidents')).toEqual(['oom']);
  });

  it('tells broad questions, whose answer is every matching incident, from questions about one', () => {
    for (const q of [
      'what happened with the payments database?',
      'whats happened with orders?',
      'payments db issues?',
      'anything on the notification worker?',
      'incidents on the payments api',
      'kafka problems we had',
      'did we have any db outages this month?',
      'show me everything about redis',
      'whats the story with the orders database',
    ]) {
      expect(isBroad(normalizeQuestion(q)), q).toBe(true);
      expect(analyzeQuestion(q, now).kind, q).toBe('list');
    }
    for (const q of [
      'why did the payments database run out of disk',
      'pg primary crashed on payments, what happened',
      'are there known issues?',
    ])
      expect(isBroad(normalizeQuestion(q)), q).toBe(false);
  });

  it('corrects a typo one edit away from a single known word, and drops a misspelt noise word', () => {
    expect(editDistance('paymnets', 'payments')).toBe(1);
    expect(editDistance('postgress', 'postgres')).toBe(1);
    expect(editDistance('kafka', 'redis')).toBe(2);
    const vocabulary = new Set(['payments', 'postgres', 'checkout']);
    expect(correctTypo('paymnets', vocabulary)).toBe('payments');
    expect(correctTypo('chekcout', vocabulary)).toBe('checkout');
    expect(correctTypo('ledger', vocabulary)).toBe('ledger');
    // Short words and words with digits are never "corrected".
    expect(correctTypo('pgg', vocabulary)).toBe('pgg');
    expect(correctTypo('p99x', vocabulary)).toBe('p99x');
    // Ambiguous: one edit from two words, so kept.
    expect(correctTypo('cart', new Set(['card', 'care']))).toBe('cart');
    expect(correctTerms(['waht', 'paymnets', 'db', 'database'], ['payments-db', 'checkout-api'])).toEqual([
      'payments',
      'db',
    ]);
  });

  it('weighs recency: full boost when new, half a month later half of it, nothing without a date', () => {
    expect(recencyBoost(now.toISOString(), now)).toBeCloseTo(0.3);
    expect(recencyBoost(new Date(now.getTime() - 30 * 86_400_000).toISOString(), now)).toBeCloseTo(0.15);
    expect(recencyBoost(null, now)).toBe(0);
  });
});
