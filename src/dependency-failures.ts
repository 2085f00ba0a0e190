import { withoutQueryParameters } from './db/query-errors.js';

/**
 * Whether an error means a dependency could not be reached or would not serve: PostgreSQL (a
 * restart, a failover, its connection limit, a full disk) or Temporal, as opposed to a fault
 * in the request or in our code. The api answers those 503 `service_unavailable` with
 * `Retry-After`, so a monitoring tool retries its delivery and a client backs off, instead of
 * reading a 500 as a bug.
 */

/**
 * postgres.js's own connection errors, and the socket errors it passes through unchanged (a
 * socket error from another dependency, such as a `fetch` cause, means the same).
 */
const CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // Ours: a call refused at once while Temporal is known not to answer (src/temporal/port.ts).
  'TEMPORAL_UNAVAILABLE',
]);

/**
 * SQLSTATEs of a server that cannot serve now: connection exceptions (class 08), insufficient
 * resources (class 53: too many connections, disk full, out of memory), and operator
 * intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 57P05
 * idle session timeout), and 25P03, a connection the server ended for idling in a transaction
 * (a stalled network leaves one so; the next request on it meets the end). Query cancellation
 * (57014) is told apart by `isStatementTimeout`.
 */
const UNAVAILABLE_STATE = /^(08|53)|^57P0[1235]$|^25P03$/;

/** gRPC statuses of a Temporal server that cannot be reached or did not answer in time. */
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

type Cause = { name?: unknown; code?: unknown; cause?: unknown; stack?: unknown };

/**
 * postgres.js's connection throwing on a server message it did not expect (a ParseComplete with no
 * query waiting, met on a connection that came back from a stalled network): the driver destroys
 * that socket and fails the query with the TypeError. The connection broke; it is no fault of ours.
 */
const DRIVER_CONNECTION_FRAME = /[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js:/;
const isDriverProtocolFault = (e: Cause): boolean =>
  e instanceof TypeError && typeof e.stack === 'string' && DRIVER_CONNECTION_FRAME.test(e.stack.split('\n')[1] ?? '');

/**
 * Whether the error or one of its causes passes `test`. Drizzle wraps a failed query
 * (DrizzleQueryError) with the driver's error as its cause.
 */
function anyCause(err: unknown, test: (e: Cause) => boolean): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as Cause).cause, depth++) {
    if (test(e as Cause)) return true;
  }
  return false;
}

/** What a client is told while the database (or another dependency) cannot be reached. */
export const DEPENDENCY_UNAVAILABLE_MESSAGE =
  'The service cannot reach its database or another dependency; retry shortly';

/** Whether the unreachable dependency is Temporal (its client gave up, or our gate refused at once). */
export function isWorkflowEngineUnavailable(err: unknown): boolean {
  return (
    isDependencyUnavailable(err) && anyCause(err, (e) => e.name === 'ServiceError' || e.code === 'TEMPORAL_UNAVAILABLE')
  );
}

export function isDependencyUnavailable(err: unknown): boolean {
  return anyCause(err, (e) => {
    if (e.name === 'ServiceError') {
      // The Temporal client's, after its own retries: the gRPC status is its cause's code.
      const status = ((e.cause ?? {}) as Cause).code;
      if (status === GRPC_UNAVAILABLE || status === GRPC_DEADLINE_EXCEEDED) return true;
    }
    if (isDriverProtocolFault(e)) return true;
    if (typeof e.code !== 'string') return false;
    return CONNECTION_CODES.has(e.code) || (e.name === 'PostgresError' && UNAVAILABLE_STATE.test(e.code));
  });
}

/**
 * Whether a statement was cancelled (SQLSTATE 57014): the api's statement bound passed, behind a
 * lock or on a database too busy to answer, or an operator cancelled it. Also a 503: the request
 * did nothing and can be retried.
 */
export function isStatementTimeout(err: unknown): boolean {
  return anyCause(err, (e) => e.name === 'PostgresError' && e.code === '57014');
}

/**
 * Whether PostgreSQL aborted the transaction as a deadlock victim (40P01) or for a serialization
 * failure (40001): rolled back whole, so running it again may succeed.
 */
export function isTransactionConflict(err: unknown): boolean {
  return anyCause(err, (e) => e.name === 'PostgresError' && (e.code === '40P01' || e.code === '40001'));
}

/**
 * Whether a Temporal call ended past its gRPC deadline: the client's own error for an Update
 * (`WorkflowUpdateRPCTimeoutOrCancelledError`), or a ServiceError with DEADLINE_EXCEEDED. The
 * server may end a call so a moment before the client's clock reaches the deadline.
 */
export function isDeadlineExceeded(err: unknown): boolean {
  return anyCause(
    err,
    (e) =>
      e.name === 'WorkflowUpdateRPCTimeoutOrCancelledError' ||
      (e.name === 'ServiceError' && ((e.cause ?? {}) as Cause).code === GRPC_DEADLINE_EXCEEDED),
  );
}

/**
 * How a failure is logged: an outage (a dependency that cannot be reached) as its reason in one
 * line, since an outage brings many and its stack says nothing; anything else with its error and
 * stack (ADR 0223).
 */
export function failureLogFields(err: unknown): { reason: string } | { err: unknown } {
  return isWorkflowEngineUnavailable(err) || isDependencyUnavailable(err) ? { reason: failureReason(err) } : { err };
}

/**
 * An error's message with its causes' (`Failed query: select …: connect ECONNREFUSED …`), and
 * never a failed statement's parameters.
 */
export function failureReason(err: unknown): string {
  withoutQueryParameters(err);
  const messages: string[] = [];
  for (
    let e = err, depth = 0;
    e !== undefined && e !== null && depth < 5;
    e = e instanceof Error ? e.cause : undefined, depth++
  ) {
    const message = e instanceof Error ? e.message : String(e);
    if (message && !messages.at(-1)?.endsWith(message)) messages.push(message);
  }
  return messages.join(': ');
}

/**
 * Runs `call`, watching the dependency it waits on: once it has waited `everyMs`, and every
 * `everyMs` after, `answers` probes the dependency; when it does not answer, the call is given up
 * with `unavailable()` (made once) and its outcome, whenever it comes, is dropped. Used for
 * Temporal and PostgreSQL: their clients' own bounds cannot act on
 * a server that keeps its connections open and answers nothing.
 */
export function watchCall<T>(
  answers: () => Promise<boolean>,
  everyMs: number,
  unavailable: () => Error,
  call: () => Promise<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      settle();
    };
    const timer = setInterval(() => {
      void answers().then((answered) => {
        if (!answered) finish(() => reject(unavailable()));
      });
    }, everyMs);
    call().then(
      (value) => finish(() => resolve(value)),
      (err: unknown) => finish(() => reject(err)),
    );
  });
}
