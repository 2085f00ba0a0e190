import { Piscina } from 'piscina';
import { AppError } from '../errors.js';
import { parseDelivery, type DeliveryToParse, type ParsedWebhook } from './parse-delivery.js';
import type { ParseOutcome } from './parse-worker.js';

export interface DeliveryParserSettings {
  /** Parse threads (0: every delivery on the api's thread). */
  threads: number;
  /** Bodies of at least this many bytes go to a parse thread; smaller ones cost less than the hand-over. */
  offThreadFromBytes: number;
  /** Large deliveries waiting for a thread beyond which new ones are answered 503 (their bodies are held meanwhile). */
  maxQueued: number;
}

export const DEFAULT_PARSER_SETTINGS: DeliveryParserSettings = {
  threads: 1,
  offThreadFromBytes: 64 * 1024,
  maxQueued: 32,
};

export interface DeliveryParser {
  parse(delivery: DeliveryToParse): Promise<ParsedWebhook>;
  close(): Promise<void>;
}

/** From the TypeScript sources a parse thread needs tsx to load its module; compiled, it loads the JavaScript. */
function workerModule(): string {
  const fromSources = import.meta.url.endsWith('.ts');
  return new URL(fromSources ? './parse-worker-tsx.mjs' : './parse-worker.js', import.meta.url).href;
}

/**
 * Parses webhook deliveries, a large one on a parse thread so that its JSON and provider parse
 * (about 130 ms for a 4 MiB Alertmanager group) do not stall every other request (ADR 0252).
 * Threads start on first use and stop when idle.
 */
export function createDeliveryParser(overrides: Partial<DeliveryParserSettings> = {}): DeliveryParser {
  const settings = { ...DEFAULT_PARSER_SETTINGS, ...overrides };
  let pool: Piscina | undefined;
  const threadPool = () =>
    (pool ??= new Piscina({
      filename: workerModule(),
      minThreads: 0,
      maxThreads: settings.threads,
      maxQueue: settings.maxQueued,
      idleTimeout: 5 * 60_000,
    }));
  return {
    async parse(delivery) {
      if (settings.threads === 0 || delivery.body.byteLength < settings.offThreadFromBytes)
        return parseDelivery(delivery);
      const p = threadPool();
      if (p.queueSize >= settings.maxQueued) {
        throw new AppError('service_unavailable', 'Too many large deliveries are waiting to be parsed; retry shortly');
      }
      const outcome = (await p.run(delivery)) as ParseOutcome;
      if (!outcome.ok) throw new AppError(outcome.code, outcome.message, outcome.details);
      return outcome.parsed;
    },
    async close() {
      await pool?.destroy();
    },
  };
}
