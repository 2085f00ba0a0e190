import { describe, expect, it } from 'vitest';
import { analyzeQuestion, extractTerms, findPeriod, withConversation } from '../../src/assistant/intents.js';
import { mentionedServices } from '../../src/assistant/retrieval.js';

const now = new Date('2026-03-18T10:00:00.000Z'); // a Wednesday

describe('reading a chat question', () => {
  it('keeps content keywords and service names whole, without question and meta words', () => {
    expect(extractTerms('How many incidents did payments-db have?')).toEqual(['payments-db']);
    expect(extractTerms('Which runbook fixes connection pool exhaustion?')).toEqual([
      'connection',
      'pool',
      'exhaustion',
    ]);
    expect(extractTerms('What caused the last checkout outage?')).toEqual(['checkout', 'outage']);
    expect(extractTerms('Deploy v2.14.0 broke 2 pods')).toEqual(['deploy', 'v2.14.0', 'broke', 'pods']);
  });

  it('finds the period a question names, in UTC calendar terms', () => {
    const period = (text: string) => {
      const p = findPeriod(text, now).period;
      return p && [p.label, p.from.toISOString(), p.to.toISOString()];
    };
    expect(period('incidents this month')).toEqual(['this month', '2026-03-01T00:00:00.000Z', now.toISOString()]);
    expect(period('and last month?')).toEqual(['last month', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z']);
    expect(period('in the last 7 days')).toEqual(['last 7 days', '2026-03-11T10:00:00.000Z', now.toISOString()]);
    expect(period('this week')).toEqual(['this week', '2026-03-16T00:00:00.000Z', now.toISOString()]);
    expect(period('last week')).toEqual(['last week', '2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z']);
    expect(period('yesterday')).toEqual(['yesterday', '2026-03-17T00:00:00.000Z', '2026-03-18T00:00:00.000Z']);
    expect(period('outages in november')).toEqual([
      'in November 2025',
      '2025-11-01T00:00:00.000Z',
      '2025-12-01T00:00:00.000Z',
    ]);
    expect(period('what caused the outage')).toBeNull();
    expect(findPeriod('How many incidents in the last 30 days?', now).rest).not.toContain('30');
  });

  it('tells counts, causes, fixes, runbooks, patterns and evidence apart', () => {
    const kind = (text: string) => analyzeQuestion(text, now).kind;
    expect(kind('How many incidents did payments-db have this month?')).toBe('count');
    expect(kind('What caused the last checkout outage?')).toBe('cause');
    expect(analyzeQuestion('What caused the last checkout outage?', now).latest).toBe(true);
    expect(kind('Why did search-api time out?')).toBe('cause');
    expect(kind('How was the auth-service token rejection fixed?')).toBe('fix');
    expect(kind('Which runbook fixes connection pool exhaustion?')).toBe('runbook');
    expect(kind('How do we handle an expired TLS certificate?')).toBe('runbook');
    expect(kind('Have we seen redis memory evictions before?')).toBe('pattern');
    expect(kind('What evidence showed that the deploy caused the 502s?')).toBe('evidence');
    expect(kind('bcrypt cost factor')).toBe('search');
  });

  it('lets a follow-up inherit the subject, the kind and the period it does not restate', () => {
    const first = analyzeQuestion('How many incidents did payments-db have this month?', now);
    const andLastMonth = withConversation(analyzeQuestion('and last month?', now), first);
    expect(andLastMonth).toMatchObject({ kind: 'count', terms: ['payments-db'], inheritsSubject: true });
    expect(andLastMonth.period?.label).toBe('last month');

    const whatAbout = withConversation(analyzeQuestion('what about checkout-api?', now), first);
    expect(whatAbout).toMatchObject({ kind: 'count', terms: ['checkout-api'], inheritsSubject: false });
    expect(whatAbout.period?.label).toBe('this month');

    const cause = analyzeQuestion('What caused the payments-db connection pool exhaustion?', now);
    const fixed = withConversation(analyzeQuestion('And how was it fixed?', now), cause);
    expect(fixed).toMatchObject({
      kind: 'fix',
      terms: ['payments-db', 'maxconn'],
      inheritsSubject: true,
    });

    const fresh = withConversation(analyzeQuestion('Which runbook covers kafka consumer lag?', now), cause);
    expect(fresh).toMatchObject({ kind: 'runbook', terms: ['kafka', 'consumer', 'lag'], inheritsSubject: false });
  });

  it('recognises service names exactly, else by their first part', () => {
    const services = ['payments-db', 'payments-api', 'checkout-api', 'search-api'];
    expect(mentionedServices(['payments-db', 'pool'], services)).toEqual(['payments-db']);
    expect(mentionedServices(['payments', 'outage'], services)).toEqual(['payments-db', 'payments-api']);
    expect(mentionedServices(['api'], services)).toEqual([]);
  });
});
