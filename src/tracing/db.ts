/**
 * Database spans (ADR 0282): the `postgres` driver has no OpenTelemetry instrumentation, so its
 * client is wrapped, only when tracing is on. Each statement run inside a traced operation (an
 * api request, an activity) is a client span under it, named by its operation and table; a
 * statement run outside any span (a dispatcher's poll, a metrics scrape) makes none.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import type postgres from 'postgres';

/** The first word of a statement, past any leading comment. */
const KEYWORD = /^\s*(?:(?:--[^\n]*\n|\/\*[\s\S]*?\*\/)\s*)*([a-zA-Z]+)/;
/** The first table a statement names (not a function such as `unnest(…)`). */
const TABLE = /\b(?:from|into|update|join)\s+(?:"?[a-zA-Z_][\w$]*"?\.)?"?([a-zA-Z_][\w$]*)(?![\w$])"?(?!\s*\()/i;

/**
 * What a span tells of a statement: its operation and first table, read from its text without
 * the parameters (a tagged template's strings; drizzle's `$n` placeholders), so never a value.
 */
export function describeStatement(text: string): { operation: string; table?: string } {
  const operation = KEYWORD.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';
  const table = TABLE.exec(text)?.[1];
  return table ? { operation, table } : { operation };
}

/** What of postgres.js's lazy query this needs: it runs at its first `handle()` (then, execute…). */
interface LazyQuery {
  strings: readonly string[];
  executed?: boolean;
  handle(): Promise<void>;
}

const isQuery = (value: unknown): value is LazyQuery =>
  typeof (value as LazyQuery | undefined)?.handle === 'function' && Array.isArray((value as LazyQuery).strings);

function traceQuery<T>(query: T, tracer: Tracer, base: Attributes): T {
  if (!isQuery(query)) return query;
  const handle = query.handle;
  query.handle = function (this: LazyQuery) {
    // Read when the query runs (the awaiting caller's context), not when it was built: a fragment
    // built and embedded in another query never runs, and makes no span.
    const parent = context.active();
    if (!this.executed && trace.getSpan(parent)) {
      const { operation, table } = describeStatement(this.strings.join(' '));
      const span = tracer.startSpan(
        table ? `${operation} ${table}` : operation,
        {
          kind: SpanKind.CLIENT,
          attributes: { ...base, 'db.operation': operation, ...(table ? { 'db.sql.table': table } : {}) },
        },
        parent,
      );
      // Promise's own then: postgres.js's would run the query again. The SQLSTATE, not the
      // message, which can quote a value.
      void Promise.prototype.then.call(
        this,
        () => span.end(),
        (err: { code?: unknown }) => {
          if (typeof err?.code === 'string') span.setAttribute('db.response.status_code', err.code);
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      );
    }
    return handle.call(this);
  };
  return query;
}

type Fn = (...args: unknown[]) => unknown;

/** `sql` whose statements (tagged, `unsafe`, and inside `begin`/`savepoint`/`reserve`) make spans. */
export function traceSql<T extends postgres.Sql>(sql: T, tracer: Tracer): T {
  const base: Attributes = { 'db.system': 'postgresql' };
  if (sql.options.database) base['db.name'] = sql.options.database;
  const wrap = <S extends object>(target: S): S =>
    new Proxy(target, {
      apply: (fn, self, args) => traceQuery(Reflect.apply(fn as Fn, self, args), tracer, base),
      get(fn, prop) {
        const value = Reflect.get(fn, prop) as unknown;
        if (typeof value !== 'function') return value;
        const f = value as Fn;
        if (prop === 'unsafe') return (...args: unknown[]) => traceQuery(f(...args), tracer, base);
        if (prop === 'begin' || prop === 'savepoint') {
          return (...args: unknown[]) => {
            const body = args.pop() as Fn;
            return f(...args, (tx: object) => body(wrap(tx)));
          };
        }
        if (prop === 'reserve') return async () => wrap((await f()) as object);
        return value;
      },
    });
  return wrap(sql);
}
