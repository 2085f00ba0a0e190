/**
 * One trace from a REST call through the incident workflow to its activities, read back from an
 * in-memory exporter; the suite's workflow bundle carries the tracing interceptors as a
 * production one does (bundle-workflows.ts), and the traced history replays on it.
 */
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { describeStatement } from '../../src/tracing/db.js';
import { workflowSpanSinks } from '../../src/tracing/temporal.js';
import { createTracing, type Tracing } from '../../src/tracing/tracing.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let svc: TestService;

beforeAll(async () => {
  tracing = createTracing('iis-test', {}, exporter)!;
  svc = await startTestService({ tracing: { tracing, workflowBundlePath: inject('workflowBundlePath') } });
}, 180_000);

afterAll(async () => {
  await svc?.stop();
  await tracing?.shutdown();
});

const traceOf = (span: ReadableSpan) => span.spanContext().traceId;

describe('traces', () => {
  it('joins the api request, the workflow and its activities in one trace', async () => {
    const t = await svc.newTenant();
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Checkout latency', description: 'p99 of checkout above 2 s since the deploy' },
    });
    expect(created.status).toBe(201);
    const incidentId: string = created.body.incidentId;
    // The investigation is an Update of the workflow; its agents are activities.
    const started = await svc.api('POST', '/v1/investigation/', { token: t.member, body: { incidentId } });
    expect(started.status).toBe(202);

    const finished = () => exporter.getFinishedSpans();
    const request = finished().find(
      (s) => s.name === 'POST /v1/investigation/' && s.attributes['http.response.status_code'] === 202,
    );
    expect(
      request,
      finished()
        .map((s) => s.name)
        .join(', '),
    ).toBeDefined();
    expect(request!.attributes['http.route']).toBe('/v1/investigation/');
    const traceId = traceOf(request!);

    // The workflow's and the activities' spans arrive as they end.
    const spans = await eventually(async () => {
      const inTrace = finished().filter((s) => traceOf(s) === traceId);
      return inTrace.some((s) => s.name === 'RunActivity:beginInvestigation') ? inTrace : undefined;
    }, 30_000);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    // The activity's span descends, parent by parent, through the workflow's update handler and
    // the api's Temporal client from the api request's span.
    const activity = spans.find((s) => s.name === 'RunActivity:beginInvestigation')!;
    const ancestors: string[] = [];
    for (let s: ReadableSpan | undefined = activity; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined)
      ancestors.push(s.name);
    expect(ancestors).toEqual([
      'RunActivity:beginInvestigation',
      'StartActivity:beginInvestigation',
      'HandleUpdate:startInvestigation',
      'UpdateWithStartWorkflow:startInvestigation',
      'POST /v1/investigation/',
    ]);

    // Database spans: the api request's own statements under its span, and the activity's
    // (its transaction's insert included) under the activity's; operation and table, never a value.
    const dbSpansUnder = (parent: ReadableSpan) =>
      spans.filter((s) => s.parentSpanId === parent.spanContext().spanId && s.attributes['db.system'] === 'postgresql');
    const requestDb = dbSpansUnder(request!);
    expect(requestDb.length, spans.map((s) => s.name).join(', ')).toBeGreaterThan(0);
    expect(requestDb.map((s) => s.name)).toContain('SELECT incidents');
    const activityDb = dbSpansUnder(activity);
    expect(activityDb.map((s) => s.name)).toEqual(expect.arrayContaining(['SELECT tenants', 'INSERT investigations']));
    expect(activityDb.find((s) => s.name === 'INSERT investigations')!.attributes).toMatchObject({
      'db.system': 'postgresql',
      'db.operation': 'INSERT',
      'db.sql.table': 'investigations',
    });
    for (const s of [...requestDb, ...activityDb]) {
      expect(s.kind).toBe(SpanKind.CLIENT);
      expect(JSON.stringify(s.attributes)).not.toContain(incidentId);
      expect(JSON.stringify(s.attributes)).not.toContain(t.tenantId);
    }
    // No statement outside a traced operation (the dispatcher's polls) makes a span of its own.
    expect(finished().filter((s) => s.attributes['db.system'] && !s.parentSpanId)).toEqual([]);

    // The workflow's own run continues the trace of the request that opened the incident: the
    // investigation's agents are in it (its RunWorkflow span ends only with the workflow).
    const opened = finished().find((s) => s.name === 'POST /v1/incidents/chat')!;
    expect(opened.attributes['http.response.status_code']).toBe(201);
    const openedTrace = await eventually(async () => {
      const names = finished()
        .filter((s) => traceOf(s) === traceOf(opened))
        .map((s) => s.name);
      return names.includes('RunActivity:triageIncident') && names.includes('RunActivity:logsAgent')
        ? names
        : undefined;
    }, 30_000);
    expect(openedTrace).toContain('StartWorkflow:incidentWorkflow');

    // The traced history replays on the bundle it ran on (the interceptors are deterministic).
    const history = await svc.client.workflow.getHandle(incidentId).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: workflowSpanSinks(undefined) },
      history,
      incidentId,
    );
  }, 120_000);

  it("names a database span by the statement's operation and first table, from its text alone", () => {
    expect(describeStatement('select "id", "title" from "incidents" where "incidents"."tenant_id" = $1')).toEqual({
      operation: 'SELECT',
      table: 'incidents',
    });
    expect(describeStatement('insert into "events" ("seq") values ($1)')).toEqual({
      operation: 'INSERT',
      table: 'events',
    });
    expect(describeStatement('\n  update "approvals" set "status" = $1')).toEqual({
      operation: 'UPDATE',
      table: 'approvals',
    });
    expect(describeStatement('select count(*) from unnest($1::float8[]) b join d on true')).toEqual({
      operation: 'SELECT',
      table: 'd',
    });
    expect(describeStatement('/* why */ begin')).toEqual({ operation: 'BEGIN' });
  });

  it('is off unless OTEL_TRACES_EXPORTER names an exporter, and refuses one it does not know', async () => {
    expect(createTracing('iis-test', {})).toBeUndefined();
    expect(createTracing('iis-test', { OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(createTracing('iis-test', { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(() => createTracing('iis-test', { OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
    const on = createTracing('iis-test', { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'iis-api-eu' });
    expect(on?.resource.attributes['service.name']).toBe('iis-api-eu');
    await on?.shutdown();
  });
});
