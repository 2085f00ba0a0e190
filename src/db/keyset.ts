import { and, eq, lt, or, type Column, type SQL } from 'drizzle-orm';

/**
 * Keyset paging, newest first: rows strictly after `after` in `(created_at desc, id desc)` order,
 * i.e. older, or as old with a smaller id.
 */
export function olderThan(createdAt: Column, id: Column, after: { createdAt: Date; id: string }): SQL {
  return or(lt(createdAt, after.createdAt), and(eq(createdAt, after.createdAt), lt(id, after.id)))!;
}
