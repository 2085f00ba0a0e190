/** The grading rule of ADR 0271 on hand-written answers: each grade, the claim's cut, the figures. */
import { describe, expect, it } from 'vitest';
import { causeStatement, figures, grade, names } from './grade.js';
import type { Truth } from './types.js';

const flag: Truth = {
  subject: ['new-checkout-flow'],
  mechanism: [/flag|feature/i],
  oneHopShort: ['checkout-api'],
  action: [/disable|turn off/i, /new-checkout-flow/],
};
const answer = (rootCause: string, confidence = 0.8, action = 'Disable flag new-checkout-flow') => ({
  rootCause,
  confidence,
  recommendedActions: [action, 'Page the payments team'],
});

describe('investigation corpus grading', () => {
  it('grades bullseye, one hop short, right area and wrong area', () => {
    expect(grade(flag, answer('A feature-flag change: new-checkout-flow went to 100%.')).grade).toBe('bullseye');
    expect(grade(flag, answer('A bad release of checkout-api (sha 1a2b3c4).')).grade).toBe('one hop short');
    expect(grade(flag, answer('new-checkout-flow users see 500s from inventory.')).grade).toBe(
      'right area, wrong diagnosis',
    );
    expect(grade(flag, answer('The disk is full on ip-10-0-12-87.')).grade).toBe('wrong area');
  });

  it('reads the claim only: not the evidence it quotes, not what it ruled out', () => {
    expect(
      causeStatement('A bad release of checkout-api. Evidence: flag new-checkout-flow changed. Ruled out: x'),
    ).toBe('A bad release of checkout-api.');
    expect(
      grade(flag, answer('A bad release of checkout-api. Evidence: the feature flag new-checkout-flow.')).grade,
    ).toBe('one hop short');
    expect(
      grade(flag, answer('A bad release of checkout-api. Ruled out: feature flag new-checkout-flow (scored 0.4).'))
        .grade,
    ).toBe('one hop short');
  });

  it('counts a name only as a whole word', () => {
    expect(names('deployment of checkout-api-v2 failed', 'checkout-api')).toBe(false);
    expect(names('TLS on payments-api.payments.svc expired', 'payments-api')).toBe(true);
    expect(names('Stripe (stripe.com) fails', 'stripe')).toBe(true);
  });

  it('never takes Undetermined for a cause the evidence shows', () => {
    const g = grade(flag, answer('Undetermined: no flag or feature change of new-checkout-flow was seen.', 0.1));
    expect(g).toMatchObject({ grade: 'wrong area', correct: false });
  });

  it('takes Undetermined, or a hedged lean, for an undetermined incident', () => {
    const truth: Truth = {
      subject: ['payments-api', 'stripe'],
      mechanism: [],
      oneHopShort: ['checkout-api'],
      action: [/payments-api|stripe/i],
      undetermined: true,
    };
    expect(
      grade(truth, answer('Undetermined: the evidence does not show it.', 0.1, 'Read payments-api logs')).correct,
    ).toBe(true);
    expect(grade(truth, answer('A bad release of payments-api.', 0.35, 'Roll back payments-api')).correct).toBe(true);
    expect(grade(truth, answer('A bad release of payments-api.', 0.85, 'Roll back payments-api')).grade).toBe(
      'right area, wrong diagnosis',
    );
  });

  it('checks every action pattern against the first action only', () => {
    expect(
      grade(flag, answer('flag new-checkout-flow', 0.8, 'Disable flag new-checkout-flow')).firstActionCorrect,
    ).toBe(true);
    expect(grade(flag, answer('flag new-checkout-flow', 0.8, 'Roll back checkout-api')).firstActionCorrect).toBe(false);
    expect(grade(flag, answer('flag new-checkout-flow', 0.8, 'Disable something')).firstActionCorrect).toBe(false);
  });

  it('computes accuracy, the Brier score and the reliability bins', () => {
    const f = figures([
      { confidence: 0.9, correct: true, firstActionCorrect: true },
      { confidence: 0.9, correct: false, firstActionCorrect: false },
      { confidence: 0.1, correct: false, firstActionCorrect: true },
      { confidence: 1, correct: true, firstActionCorrect: true },
    ]);
    expect(f.rootCauseAccuracy).toBe(0.5);
    expect(f.firstActionAccuracy).toBe(0.75);
    expect(f.brier).toBeCloseTo((0.01 + 0.81 + 0.01 + 0) / 4, 10);
    expect(f.reliability.map((b) => b.count)).toEqual([1, 0, 0, 0, 3]);
    expect(f.reliability[4]).toMatchObject({ meanConfidence: expect.closeTo(0.9333, 3), accuracy: 2 / 3 });
  });

  it('calibrates an undetermined incident against 0: an honest low confidence scores well', () => {
    const honest = figures([{ confidence: 0.05, correct: true, firstActionCorrect: true, undetermined: true }]);
    expect(honest.rootCauseAccuracy).toBe(1);
    expect(honest.brier).toBeCloseTo(0.0025, 10);
    expect(honest.reliability[0]).toMatchObject({ count: 1, accuracy: 0 });
    const sure = figures([{ confidence: 0.9, correct: false, firstActionCorrect: true, undetermined: true }]);
    expect(sure.brier).toBeCloseTo(0.81, 10);
  });
});
