import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_MODEL, builtinTriage } from '../../src/analysis/builtin-triage.js';
import { createModelProvider, createOpenAiCompatibleProvider } from '../../src/analysis/providers.js';
import type { TriageInput } from '../../src/analysis/types.js';

function input(
  overrides: Partial<TriageInput['incident']> = {},
  rest: Partial<Omit<TriageInput, 'incident'>> = {},
): TriageInput {
  return {
    incident: {
      incidentId: 'inc_test',
      title: 'Checkout latency above 2s',
      description: 'p99 latency of checkout-api rose after the deploy',
      severity: 'medium',
      source: 'automated',
      service: 'checkout-api',
      ownerTeam: 'payments',
      criticality: null,
      occurrenceCount: 1,
      recovered: false,
      ...overrides,
    },
    alerts: [],
    recentChanges: 0,
    hasRunbooks: false,
    hasPatterns: false,
    hasTopology: false,
    ...rest,
  };
}

const alert = (severity: 'critical' | 'high' | 'medium' | 'low', status: 'firing' | 'resolved' = 'firing') => ({
  alertName: 'HighLatency',
  severity,
  status,
  service: 'checkout-api',
  title: 'p99 above 2s',
  occurredAt: '2026-11-21T03:00:00.000Z',
});

describe('built-in triage', () => {
  it('takes the highest alert severity as priority and says why', () => {
    const result = builtinTriage(input({}, { alerts: [alert('low'), alert('high')] }));
    expect(result.priority).toBe('high');
    expect(result.reasoning).toContain('the alerts report high (incident was medium)');
    expect(result.summary).toContain('checkout-api');
    expect(result.summary).toContain('owner: payments');
  });

  it('raises one level for a service rated 8-10 and for a repeating alert, capped at critical', () => {
    expect(builtinTriage(input({ criticality: 9 }, { alerts: [alert('medium')] })).priority).toBe('high');
    expect(builtinTriage(input({ criticality: 9, occurrenceCount: 25 }, { alerts: [alert('medium')] })).priority).toBe(
      'critical',
    );
    expect(
      builtinTriage(input({ criticality: 10, occurrenceCount: 25 }, { alerts: [alert('critical')] })).priority,
    ).toBe('critical');
  });

  it('lowers one level when every alert has recovered', () => {
    expect(builtinTriage(input({ recovered: true }, { alerts: [alert('high', 'resolved')] })).priority).toBe('medium');
  });

  it('suggests the agents the signals call for', () => {
    const result = builtinTriage(
      input({}, { alerts: [alert('high')], recentChanges: 2, hasRunbooks: true, hasTopology: true }),
    );
    expect(result.suggestedAgents).toEqual(['alerts', 'deployment', 'code_change', 'metrics', 'topology', 'runbook']);
    const quiet = builtinTriage(
      input({
        title: 'Something odd',
        description: 'Users report something odd',
        service: null,
        ownerTeam: null,
        source: 'manual',
      }),
    );
    expect(quiet.suggestedAgents).toEqual(['alerts']);
    expect(quiet.confidence).toBeLessThan(result.confidence);
    expect(result.confidence).toBeGreaterThan(0);
    expect(result.confidence).toBeLessThanOrEqual(0.95);
  });
});

describe('OpenAI-compatible provider against a local fake server', () => {
  let server: Server;
  let baseUrl: string;
  let reply: (req: IncomingMessage, res: ServerResponse, body: string) => void = () => undefined;
  const seen: Array<{ auth: string | undefined; body: any }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ auth: req.headers.authorization, body: JSON.parse(body) });
        reply(req, res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const completion = (content: string) =>
    JSON.stringify({
      model: 'fake-gpt-1',
      choices: [{ message: { role: 'assistant', content } }],
      usage: { prompt_tokens: 900, completion_tokens: 300, total_tokens: 1200 },
    });

  function provider(fallbacks: string[] = [], timeoutMs = 2000) {
    return createOpenAiCompatibleProvider({
      baseUrl,
      apiKey: 'sk-test',
      model: 'fake-gpt-1',
      timeoutMs,
      costPer1kTokens: 0.5,
      onFallback: (r) => fallbacks.push(r),
    });
  }

  it('uses valid structured output, with tokens and cost', async () => {
    reply = (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        completion(
          JSON.stringify({
            priority: 'critical',
            summary: 'Checkout down after deploy',
            confidence: 0.9,
            reasoning: 'deploy then errors',
            suggestedAgents: ['deployment', 'logs', 'logs'],
          }),
        ),
      );
    };
    const result = await provider().triage(input());
    expect(result).toEqual({
      output: {
        priority: 'critical',
        summary: 'Checkout down after deploy',
        confidence: 0.9,
        reasoning: 'deploy then errors',
        suggestedAgents: ['deployment', 'logs'],
      },
      model: 'fake-gpt-1',
      tokensUsed: 1200,
      costUsd: 0.6,
    });
    const last = seen.at(-1)!;
    expect(last.auth).toBe('Bearer sk-test');
    expect(last.body).toMatchObject({ model: 'fake-gpt-1', response_format: { type: 'json_object' } });
    expect(JSON.parse(last.body.messages[1].content).incident.title).toBe('Checkout latency above 2s');
  });

  it('falls back to the built-in analyzer on invalid JSON, invalid output, an error status and a timeout', async () => {
    const cases: Array<[string, (req: IncomingMessage, res: ServerResponse) => void]> = [
      ['the model did not answer with JSON', (_q, res) => res.end(completion('Sure! The priority is high.'))],
      [
        'invalid output',
        (_q, res) =>
          res.end(
            completion(
              JSON.stringify({ priority: 'urgent', summary: 'x', confidence: 2, reasoning: 'y', suggestedAgents: [] }),
            ),
          ),
      ],
      [
        'the model endpoint answered 500',
        (_q, res) => {
          res.statusCode = 500;
          res.end('{}');
        },
      ],
      ['timeout', () => undefined], // never answers
    ];
    for (const [reason, handler] of cases) {
      reply = handler;
      const fallbacks: string[] = [];
      const result = await provider(fallbacks, 300).triage(input({}, { alerts: [alert('high')] }));
      expect(fallbacks).toEqual([reason]);
      expect(result.model).toBe(BUILTIN_MODEL);
      expect(result.tokensUsed).toBe(0);
      expect(result.costUsd).toBe(0);
      expect(result.output.priority).toBe('high');
      expect(result.output.reasoning).toContain(
        `The model fake-gpt-1 failed: ${reason}; the built-in analyzer answered.`,
      );
    }
  });

  const synthesisInput = {
    incident: {
      incidentId: 'inc_test',
      title: 'Checkout errors',
      description: '502s since 03:10',
      severity: 'high' as const,
      service: 'checkout-api',
    },
    findings: [{ agentRole: 'deployment', content: 'Deployment 4242 of checkout-api 4 min before the first alert' }],
    hypotheses: [
      { statement: 'Bad deploy 4242 of checkout-api', score: 0.9, status: 'kept', reason: 'deployed 4 min before' },
    ],
    humanContext: ['We deployed at 03:06'],
  };
  const builtinConclusion = {
    rootCause: 'Deployment 4242 of checkout-api broke checkout',
    confidence: 0.8,
    recommendedActions: ['Roll back deployment 4242 of checkout-api'],
  };

  it('writes the investigation conclusion with a model, falling back to the built-in one', async () => {
    reply = (_req, res) => {
      res.end(
        completion(
          JSON.stringify({
            rootCause: 'The 03:06 deploy 4242 of checkout-api introduced 502s',
            confidence: 0.92,
            recommendedActions: ['Roll back deployment 4242', 'Add a canary'],
          }),
        ),
      );
    };
    const result = await provider().synthesize(synthesisInput, builtinConclusion);
    expect(result).toEqual({
      output: {
        rootCause: 'The 03:06 deploy 4242 of checkout-api introduced 502s',
        confidence: 0.92,
        recommendedActions: ['Roll back deployment 4242', 'Add a canary'],
      },
      model: 'fake-gpt-1',
      tokensUsed: 1200,
      costUsd: 0.6,
    });
    expect(JSON.parse(seen.at(-1)!.body.messages[1].content).hypotheses[0].statement).toBe(
      'Bad deploy 4242 of checkout-api',
    );

    reply = (_req, res) =>
      res.end(completion(JSON.stringify({ rootCause: 'short', confidence: 7, recommendedActions: [] })));
    const fallbacks: string[] = [];
    const fallback = await provider(fallbacks).synthesize(synthesisInput, builtinConclusion);
    expect(fallbacks).toEqual(['invalid output']);
    expect(fallback).toEqual({ output: builtinConclusion, model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 });
    expect(await createModelProvider(undefined).synthesize(synthesisInput, builtinConclusion)).toEqual({
      output: builtinConclusion,
      model: BUILTIN_MODEL,
      tokensUsed: 0,
      costUsd: 0,
    });
  });

  it('is the built-in analyzer unless a base URL is configured', async () => {
    const builtin = createModelProvider({ model: 'x', timeoutMs: 1000, costPer1kTokens: 0 });
    expect(builtin.name).toBe('builtin');
    expect((await builtin.triage(input())).model).toBe(BUILTIN_MODEL);
    expect(createModelProvider({ baseUrl, model: 'x', timeoutMs: 1000, costPer1kTokens: 0 }).name).toBe(
      'openai-compatible',
    );
  });
});
