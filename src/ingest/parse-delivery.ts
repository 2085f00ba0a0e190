import { createHash } from 'node:crypto';
import { assertJsonBounds, storableCopy, storableJson, WEBHOOK_JSON_BOUNDS } from '../domain/json-text.js';
import { AppError } from '../errors.js';
import { withOneLineLabels } from './normalize.js';
import { findProvider } from './providers/index.js';
import { PayloadError, type ParsedEvent } from './types.js';

/** A delivery as the route received it: what a parser needs, and nothing that cannot cross a thread. */
export interface DeliveryToParse {
  provider: string;
  body: Uint8Array;
  /** Request headers by lower-case name. */
  headers: Record<string, string>;
}

export interface ParsedWebhook {
  events: ParsedEvent[];
  /** `id:<the tool's delivery id>`, or `body:<SHA-256 of the body>` when it sends no usable one. */
  deliveryKey: string;
  ignored?: string;
}

/**
 * The raw body as the provider's payload, each event's raw part serialized: a 400
 * `validation_error` saying what is wrong. Pure and synchronous, so it runs on the api's thread
 * for a small body and on a parse thread for a large one.
 */
export function parseDelivery({ provider: name, body, headers }: DeliveryToParse): ParsedWebhook {
  const provider = findProvider(name);
  if (!provider) throw new AppError('not_found', `Unknown provider ${name}`);
  const header = (key: string) => headers[key];
  // A UTF-8 byte-order mark, which some senders write first, is not part of the JSON text.
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
  const payload = /^application\/x-www-form-urlencoded\s*(;|$)/i.test(header('content-type') ?? '')
    ? formPayload(text)
    : jsonPayload(text);
  let parsed;
  try {
    parsed = provider.parse(payload, header);
  } catch (err) {
    if (err instanceof PayloadError) throw new AppError('validation_error', err.message, err.details);
    throw err;
  }
  const events: ParsedEvent[] = withOneLineLabels(parsed.events).map(({ raw, ...event }) => ({
    ...event,
    rawJson: JSON.stringify(raw ?? {}),
  }));
  return {
    events,
    deliveryKey: deliveryKeyOf(parsed.deliveryId, body),
    ...(parsed.ignored !== undefined ? { ignored: parsed.ignored } : {}),
  };
}

/** A tool's delivery id: 1–200 visible ASCII characters (base64 ids hold `/`, `+` and `=`). */
const deliveryIdPattern = /^[\x21-\x7e]{1,200}$/;

/** The delivery's key: the tool's id when usable, else the body's hash (only then computed). */
function deliveryKeyOf(deliveryId: string | undefined, body: Uint8Array): string {
  if (deliveryId !== undefined && deliveryIdPattern.test(deliveryId)) return `id:${deliveryId}`;
  return `body:${createHash('sha256').update(body).digest('hex')}`;
}

function jsonPayload(text: string): unknown {
  assertJsonBounds(text, WEBHOOK_JSON_BOUNDS);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AppError('validation_error', 'Malformed JSON in request body');
  }
  return storableJson(text, body);
}

/**
 * A form-encoded body: GitHub's default content type carries the JSON payload in a `payload`
 * field; Datadog's "Encode as form" sends the payload template's keys as fields of their own
 * (a field sent twice becomes a list of its values).
 */
function formPayload(text: string): unknown {
  const fields = new URLSearchParams(text);
  const payload = fields.get('payload');
  if (payload !== null) return jsonPayload(payload);
  const body: Record<string, string | string[]> = {};
  let count = 0;
  for (const [name, value] of fields) {
    if (++count > WEBHOOK_JSON_BOUNDS.keysPerObject) {
      throw new AppError(
        'validation_error',
        `The form body has more than ${WEBHOOK_JSON_BOUNDS.keysPerObject} fields`,
        [{ path: 'body', message: `has more than ${WEBHOOK_JSON_BOUNDS.keysPerObject} fields` }],
      );
    }
    const seen = body[name];
    body[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  if (Object.keys(body).length === 0) {
    throw new AppError(
      'validation_error',
      'A form-encoded delivery must carry its fields, or its JSON in a payload field',
      [{ path: 'payload', message: 'is required' }],
    );
  }
  return storableCopy(body);
}
