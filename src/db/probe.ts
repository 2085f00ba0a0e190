import postgres from 'postgres';

/** How long a probe waits for PostgreSQL to answer a fresh connection. */
export const DATABASE_PROBE_MS = 3000;

/**
 * Whether PostgreSQL answers `select 1` on a fresh connection within `timeoutMs`. A pool's own
 * connections may all be busy, or stuck on a server that stopped answering (frozen, behind a
 * partition), where PostgreSQL's own statement bound cannot act. One probe at a time, shared by
 * every caller that asks meanwhile; its connection is closed after it.
 */
export function createDatabaseProbe(url: string, timeoutMs = DATABASE_PROBE_MS): () => Promise<boolean> {
  let inFlight: Promise<boolean> | null = null;
  const probeOnce = async (): Promise<boolean> => {
    const sql = postgres(url, {
      max: 1,
      connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      idle_timeout: 1,
      onnotice: () => undefined,
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        sql`select 1`.then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      void sql.end({ timeout: 0 }).catch(() => undefined);
    }
  };
  return () =>
    (inFlight ??= probeOnce().finally(() => {
      inFlight = null;
    }));
}
