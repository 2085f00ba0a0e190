import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_MODEL } from '../../src/analysis/builtin-triage.js';
import { createBuiltinProvider, createOpenAiCompatibleProvider } from '../../src/analysis/providers.js';
import type { ChatFact, ChatInput } from '../../src/analysis/types.js';

const fact = (overrides: Partial<ChatFact>): ChatFact => ({
  type: 'incident',
  id: 'inc_1',
  title: 'Checkout outage after a configuration push',
  service: 'checkout-api',
  at: '2026-03-02T10:00:00.000Z',
  incidentId: 'inc_1',
  summary: 'critical incident on checkout-api, resolved, opened 2026-03-02',
  rootCause: 'A configuration change set the payment gateway timeout to 50 ms.',
  actions: ['Revert the timeout'],
  relevance: 1,
  ...overrides,
});

const causeInput: ChatInput = {
  question: 'What caused the last checkout outage?',
  intent: { kind: 'cause', latest: true, subjectIncidentId: 'inc_1' },
  anchorIncidentId: null,
  history: [],
  facts: [
    fact({}),
    fact({
      type: 'investigation',
      title: 'Investigation of "Checkout outage after a configuration push"',
      summary: 'investigation completed, confidence 0.80',
    }),
    fact({
      type: 'pattern',
      id: 'pat_1',
      title: 'Bad deploy of checkout-api',
      incidentId: null,
      relevance: 0.5,
      rootCause: 'A release breaks checkout',
    }),
  ],
};

describe('built-in chat responder', () => {
  it('answers from the facts and cites exactly the ones its reply uses', async () => {
    const result = await createBuiltinProvider().answer(causeInput);
    expect(result).toMatchObject({ model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 });
    expect(result.output.reply).toContain(
      'The most recent matching incident is "Checkout outage after a configuration push" [inc_1]',
    );
    expect(result.output.reply).toContain('payment gateway timeout to 50 ms');
    // The pattern matched the question only half as well: not cited.
    expect(result.output.sources).toEqual([
      { type: 'incident', id: 'inc_1' },
      { type: 'investigation', id: 'inc_1' },
    ]);
  });

  it('answers a count with the total and the incidents listed', async () => {
    const result = await createBuiltinProvider().answer({
      ...causeInput,
      intent: {
        kind: 'count',
        service: 'checkout-api',
        severity: null,
        subject: [],
        period: { label: 'this month', from: '2026-03-01T00:00:00.000Z', to: '2026-03-18T10:00:00.000Z' },
        total: 1,
      },
      facts: [fact({})],
    });
    expect(result.output.reply).toBe(
      'checkout-api had 1 incident this month (2026-03-01 to 2026-03-18): "Checkout outage after a configuration push" [inc_1] on 2026-03-02.',
    );
    expect(result.output.sources).toEqual([{ type: 'incident', id: 'inc_1' }]);
  });
});

describe('OpenAI-compatible chat answers against a local fake server', () => {
  let server: Server;
  let baseUrl: string;
  let reply: (res: ServerResponse) => void = () => undefined;
  const bodies: any[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(body));
        reply(res);
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
      usage: { total_tokens: 800 },
    });
  const provider = (fallbacks: string[], timeoutMs = 2000) =>
    createOpenAiCompatibleProvider({
      baseUrl,
      apiKey: 'sk-test',
      model: 'fake-gpt-1',
      timeoutMs,
      costPer1kTokens: 0.5,
      onFallback: (r) => fallbacks.push(r),
    });

  it('uses a valid answer, deduplicating its sources, with tokens and cost', async () => {
    reply = (res) =>
      res.end(
        completion(
          JSON.stringify({
            reply: 'A timeout of 50 ms [inc_1].',
            sources: [
              { type: 'investigation', id: 'inc_1' },
              { type: 'investigation', id: 'inc_1' },
            ],
          }),
        ),
      );
    const result = await provider([]).answer(causeInput);
    expect(result).toEqual({
      output: { reply: 'A timeout of 50 ms [inc_1].', sources: [{ type: 'investigation', id: 'inc_1' }] },
      model: 'fake-gpt-1',
      tokensUsed: 800,
      costUsd: 0.4,
    });
    const sent = bodies.at(-1);
    expect(sent.response_format).toEqual({ type: 'json_object' });
    expect(JSON.parse(sent.messages[1].content).facts).toHaveLength(3);
  });

  it('falls back to the built-in responder on invalid output, a made-up source, an error status and a timeout', async () => {
    const builtin = await createBuiltinProvider().answer(causeInput);
    const cases: Array<[string, (res: ServerResponse) => void]> = [
      ['the model did not answer with JSON', (res) => res.end(completion('The cause was a timeout.'))],
      ['invalid output', (res) => res.end(completion(JSON.stringify({ reply: '', sources: [] })))],
      [
        'the model cited a source it was not given',
        (res) =>
          res.end(completion(JSON.stringify({ reply: 'See [inc_9].', sources: [{ type: 'incident', id: 'inc_9' }] }))),
      ],
      [
        'the model endpoint answered 503',
        (res) => {
          res.statusCode = 503;
          res.end('{}');
        },
      ],
      ['timeout', () => undefined],
    ];
    for (const [reason, handler] of cases) {
      reply = handler;
      const fallbacks: string[] = [];
      expect(await provider(fallbacks, 300).answer(causeInput)).toEqual(builtin);
      expect(fallbacks).toEqual([reason]);
    }
  });
});
