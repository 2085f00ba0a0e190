/**
 * One trace from a REST call through the incident workflow to its activities, read back from an
 * in-memory exporter; the suite's workflow bundle carries the tracing interceptors as a
 * production one does (bundle-workflows.ts), and the traced history replays on it.
 */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
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
