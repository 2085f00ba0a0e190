import type { WebhookCredential } from '../db/repositories/api-keys.js';
import type { ParsedEvent } from './types.js';

/** A delivery retried with the same body within this window gets the first answer. */
export const BODY_REPLAY_WINDOW_MS = 10 * 60 * 1000;

/**
 * A delivery retried with the same delivery id within this long gets the first answer; after
 * it, the record is purged and the id is judged afresh. It covers every tool's own retries and
 * GitHub's manual redelivery (up to 3 days back).
 */
export const DELIVERY_ID_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface IngestResult {
  eventIds: string[];
  /** One per alert of the delivery, in order: the incident it opened or joined, or null (a test,
   * suppressed or held alert, or a recovery with no open incident). */
  incidentIds: Array<string | null>;
  /** One per alert, in order: its alert record, or null for a recovery of nothing recorded. */
  alertIds?: Array<string | null>;
  /** True when every alert repeated one already recorded (none opened an incident). */
  deduplicated: boolean;
  ignored?: string;
}

export interface IngestRequest {
  tenantId: string;
  /** SHA-256 of the presented API key: the batch looks the key up in its first round trip. */
  keyHash: string;
  /**
   * Judges the key found for this tenant (undefined: no active key with that hash) before
   * anything of the delivery is written or replayed: returns it to admit the delivery, or throws
   * the AppError that refuses it.
   */
  authorize: (credential: WebhookCredential | undefined) => WebhookCredential;
  provider: string;
  /** `id:<tool delivery id>` or `body:<sha256 of the raw body>`. */
  deliveryKey: string;
  events: ParsedEvent[];
  ignored?: string;
  requestId: string;
  /** The size of the delivery's body, held in memory until it is answered (the byte bound). */
  bytes?: number;
}

export type IngestOutcome = { result: IngestResult; replayed: boolean };
