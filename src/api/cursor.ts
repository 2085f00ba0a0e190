import { AppError } from '../errors.js';

/** Opaque keyset cursor: base64url of the last row's (createdAt, id), bound to the sort order. */
export interface KeysetCursor {
  createdAt: Date;
  id: string;
  order: 'asc' | 'desc';
}

export function encodeCursor(cursor: KeysetCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id, cursor.order])).toString('base64url');
}

export function decodeCursor(value: string, order: 'asc' | 'desc'): KeysetCursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 3) {
      const [createdAt, id, cursorOrder] = parsed as unknown[];
      const date = new Date(String(createdAt));
      if (typeof id === 'string' && !Number.isNaN(date.getTime()) && (cursorOrder === 'asc' || cursorOrder === 'desc')) {
        if (cursorOrder !== order) {
          throw new AppError('validation_error', 'cursor was issued for a different sort order');
        }
        return { createdAt: date, id, order: cursorOrder };
      }
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
  }
  throw new AppError('validation_error', 'cursor is not valid');
}
