import { z } from 'zod';
import { severities } from '../db/schema/incidents.js';
import { builtinAnswer } from '../assistant/responder.js';
import { BUILTIN_MODEL, builtinTriage } from './builtin-triage.js';
import {
  agentRoles,
  chatSourceTypes,
  type ChatAnswer,
  type ChatInput,
  type ModelProvider,
  type ModelResult,
  type SynthesisConclusion,
  type SynthesisInput,
  type TriageClassification,
  type TriageInput,
} from './types.js';

/** The built-in deterministic analyzer: no network, no cost. */
export function createBuiltinProvider(): ModelProvider {
  return {
    name: 'builtin',
    async triage(input) {
      return { output: builtinTriage(input), model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 };
    },
    async synthesize(_input, builtin) {
      return { output: builtin, model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 };
    },
    async answer(input) {
      return { output: builtinAnswer(input), model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 };
    },
  };
}

export interface OpenAiCompatibleOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  /** Approximate price in USD per 1,000 tokens (prompt and completion alike). */
  costPer1kTokens: number;
  onFallback?: (reason: string) => void;
}

const TriageOutput = z
  .object({
    priority: z.enum(severities),
    summary: z.string().min(1).max(500),
    confidence: z.number().min(0).max(1),
    reasoning: z.string().min(1).max(4000),
    suggestedAgents: z.array(z.enum(agentRoles)).min(1).max(agentRoles.length),
  })
  .strict();

const SynthesisOutput = z
  .object({
    rootCause: z.string().min(10).max(4000),
    confidence: z.number().min(0).max(1),
    recommendedActions: z.array(z.string().min(1).max(500)).min(1).max(10),
  })
  .strict();

const ChatAnswerOutput = z
  .object({
    reply: z.string().trim().min(1).max(4000),
    sources: z.array(z.object({ type: z.enum(chatSourceTypes), id: z.string().min(1).max(100) }).strict()).max(20),
  })
  .strict();

const ChatCompletion = z.object({
  model: z.string().optional(),
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }) })).min(1),
  usage: z.object({ total_tokens: z.number().int().nonnegative() }).optional(),
});

const TRIAGE_INSTRUCTIONS = `You triage production incidents for an SRE team. Answer with one JSON object only:
{"priority": "critical"|"high"|"medium"|"low", "summary": string (one sentence), "confidence": number 0..1,
"reasoning": string (your reasoning chain), "suggestedAgents": array of ${agentRoles.map((r) => `"${r}"`).join(', ')}}.`;

const SYNTHESIS_INSTRUCTIONS = `You are the lead of an incident investigation. From the specialist agents' findings, the ranked
hypotheses (with the reasons the discarded ones were discarded) and any human context, state the root cause concretely
(service, deploy id or sha, dependency), a calibrated confidence, and ordered concrete recommended actions, the first one
addressing the root cause. Answer with one JSON object only:
{"rootCause": string, "confidence": number 0..1, "recommendedActions": array of strings}.`;

const CHAT_INSTRUCTIONS = `You answer an SRE team's questions about their own incident history. Use only the facts given
(incidents, investigations, evidence, patterns, runbooks, each with a type and an id; an investigation's id is its incident's
id) and the structured intent (for a count, "total" is the exact number). Be concise and factual, cite the id of every fact you
use in square brackets, and say so when the facts do not answer the question. Answer with one JSON object only:
{"reply": string, "sources": array of {"type": string, "id": string}, exactly the facts the reply used, most important first}.`;

/**
 * An OpenAI-compatible chat-completions endpoint (`LLM_BASE_URL`). Its output is validated; on
 * any error, timeout or invalid output the built-in analyzer answers instead, and the reasoning
 * says so.
 */
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): ModelProvider {
  const builtin = createBuiltinProvider();
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;

  async function complete<T>(instructions: string, input: unknown, schema: z.ZodType<T>): Promise<ModelResult<T>> {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: options.model,
        temperature: 0,
        response_format: { type: 'json_object' },
        messages: [
          { role: 'system', content: instructions },
          { role: 'user', content: JSON.stringify(input) },
        ],
      }),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    if (!res.ok) throw new Error(`the model endpoint answered ${res.status}`);
    const body = ChatCompletion.parse(await res.json());
    const content = body.choices[0]!.message.content ?? '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      throw new Error('the model did not answer with JSON');
    }
    const output = schema.parse(parsed);
    const tokensUsed = body.usage?.total_tokens ?? 0;
    return {
      output,
      model: body.model ?? options.model,
      tokensUsed,
      costUsd: Math.round((tokensUsed / 1000) * options.costPer1kTokens * 1e6) / 1e6,
    };
  }

  const reasonOf = (err: unknown) =>
    err instanceof z.ZodError
      ? 'invalid output'
      : err instanceof Error && err.name === 'TimeoutError'
        ? 'timeout'
        : (err as Error).message;

  return {
    name: 'openai-compatible',
    async synthesize(input: SynthesisInput, builtin: SynthesisConclusion): Promise<ModelResult<SynthesisConclusion>> {
      try {
        return await complete(SYNTHESIS_INSTRUCTIONS, input, SynthesisOutput);
      } catch (err) {
        options.onFallback?.(reasonOf(err));
        return { output: builtin, model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 };
      }
    },
    async answer(input: ChatInput): Promise<ModelResult<ChatAnswer>> {
      try {
        const result = await complete(CHAT_INSTRUCTIONS, input, ChatAnswerOutput);
        const sources: ChatAnswer['sources'] = [];
        for (const source of result.output.sources) {
          // A source must be one of the facts given: an id the model made up fails the answer.
          if (!input.facts.some((f) => f.type === source.type && f.id === source.id))
            throw new Error('the model cited a source it was not given');
          if (!sources.some((s) => s.type === source.type && s.id === source.id)) sources.push(source);
        }
        return { ...result, output: { reply: result.output.reply, sources } };
      } catch (err) {
        options.onFallback?.(reasonOf(err));
        return builtin.answer(input);
      }
    },
    async triage(input: TriageInput): Promise<ModelResult<TriageClassification>> {
      try {
        const result = await complete(TRIAGE_INSTRUCTIONS, input, TriageOutput);
        return {
          ...result,
          output: { ...result.output, suggestedAgents: [...new Set(result.output.suggestedAgents)] },
        };
      } catch (err) {
        const reason = reasonOf(err);
        options.onFallback?.(reason);
        const fallback = await builtin.triage(input);
        return {
          ...fallback,
          output: {
            ...fallback.output,
            reasoning: `${fallback.output.reasoning} (The model ${options.model} failed: ${reason}; the built-in analyzer answered.)`,
          },
        };
      }
    },
  };
}

export interface ModelConfig {
  baseUrl?: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  costPer1kTokens: number;
}

/** The built-in analyzer unless `LLM_BASE_URL` is configured. */
export function createModelProvider(
  config: ModelConfig | undefined,
  onFallback?: (reason: string) => void,
): ModelProvider {
  if (!config?.baseUrl) return createBuiltinProvider();
  return createOpenAiCompatibleProvider({ ...config, baseUrl: config.baseUrl, ...(onFallback ? { onFallback } : {}) });
}
