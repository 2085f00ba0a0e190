import { AppError } from '../errors.js';
import { LAST_STORABLE_TIME } from '../ingest/normalize.js';

/** Opaque keyset cursor: base64url of the last row's (createdAt, id), bound to the sort order. */
export interface KeysetCursor {
  createdAt: Date;
  id: string;
  order: 'asc' | 'desc';
}

export function encodeCursor(cursor: KeysetCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id, cursor.order])).toString('base64url');
}

/** Row ids are `prefix_ulid` (builtin skills: `skl_builtin_name`): no NUL or other text PostgreSQL refuses. */
const ROW_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function decodeCursor(value: string, order: 'asc' | 'desc'): KeysetCursor {
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new Error('not base64url'); // as issued: no padding, no +/
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 3) {
      const [createdAt, id, cursorOrder] = parsed as unknown[];
      const date = new Date(String(createdAt));
      // Rows are created after 1970 and before the year 10000 (past it PostgreSQL refuses the text),
      // and a cursor holds the time as issued: an impossible date (30 February) is not rolled over.
      const storable = date.getTime() >= 0 && date.getTime() < LAST_STORABLE_TIME && date.toISOString() === createdAt;
      if (typeof id === 'string' && ROW_ID.test(id) && storable && (cursorOrder === 'asc' || cursorOrder === 'desc')) {
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

/** The cursor after a page: the last row's position when more rows follow, else null. */
export function nextCursor(
  rows: ReadonlyArray<{ createdAt: Date; id: string }>,
  hasMore: boolean,
  order: 'asc' | 'desc' = 'desc',
): string | null {
  const last = rows.at(-1);
  return hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id, order }) : null;
}
