/**
 * Drizzle reports a failed statement as a `DrizzleQueryError` whose message, stack and `params`
 * property carry the statement's parameters: a new API key's signing secret, a trigger's HMAC
 * secret, an alert's whole payload. Logged as it is, or sent to Temporal as an activity's failure
 * (kept in its history, shown in its Web UI and in `investigation.failed`), a database outage
 * would copy secrets into places they must never reach (ADR 0225).
 *
 * `withoutQueryParameters` removes them, in place, from the error and its causes, so whatever
 * logs or reports the error later sees only the statement and the driver's error (its cause).
 * The driver's error (postgres.js `PostgresError`) can quote values too: `detail` ("Key
 * (name)=(…) already exists", "Failing row contains (…)"), `where` (the JSON text a value was
 * refused in) and `internal_query`; they stay readable by code but are no longer enumerable, so
 * neither a log line nor a serialized failure carries them.
 * The logger applies it to every error it is given, the worker to every activity failure.
 */
type QueryError = Error & { query: string; params?: unknown };
const VALUE_FIELDS = ['detail', 'where', 'internal_query'] as const;

function isQueryError(e: unknown): e is QueryError {
  return (
    e instanceof Error &&
    typeof (e as Partial<QueryError>).query === 'string' &&
    'params' in e &&
    e.message.startsWith('Failed query: ')
  );
}

export function withoutQueryParameters<T>(err: T): T {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'PostgresError') {
      for (const field of VALUE_FIELDS) {
        if (Object.prototype.propertyIsEnumerable.call(e, field))
          Object.defineProperty(e, field, { enumerable: false });
      }
    }
    if (!isQueryError(e)) continue;
    const message = `Failed query: ${e.query}`;
    if (e.message === message) continue;
    const stack = e.stack;
    const old = e.message;
    e.message = message;
    e.stack = stack?.includes(old) ? stack.replace(old, message) : `${e.name}: ${message}`;
    delete e.params;
  }
  return err;
}

/** The same for every Error among an object's own values (a log line's fields). */
export function fieldsWithoutQueryParameters(fields: unknown): void {
  if (!fields || typeof fields !== 'object' || Array.isArray(fields)) return;
  for (const value of Object.values(fields)) if (value instanceof Error) withoutQueryParameters(value);
}
