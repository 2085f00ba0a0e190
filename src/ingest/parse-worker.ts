import { AppError, type ErrorCode } from '../errors.js';
import { parseDelivery, type DeliveryToParse, type ParsedWebhook } from './parse-delivery.js';

/** What crosses back from a parse thread: an AppError loses its class on the way, so it goes as data. */
export type ParseOutcome =
  { ok: true; parsed: ParsedWebhook } | { ok: false; code: ErrorCode; message: string; details?: unknown };

/** A parse thread's task (the pool's worker module). */
export default function parseOnThread(delivery: DeliveryToParse): ParseOutcome {
  try {
    return { ok: true, parsed: parseDelivery(delivery) };
  } catch (err) {
    if (err instanceof AppError)
      return {
        ok: false,
        code: err.code,
        message: err.message,
        ...(err.details !== undefined ? { details: err.details } : {}),
      };
    throw err;
  }
}
