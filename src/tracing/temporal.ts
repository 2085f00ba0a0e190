/**
 * Temporal's OpenTelemetry interceptors on our side of each process: the client's put the trace
 * context in the headers of what it starts or signals, the worker's continue it in each activity
 * and receive the workflows' spans (made in the sandbox, handed out through a sink).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClientInterceptors } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from './tracing.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The workflow interceptors every bundle carries (.ts under tsx, .js once compiled). */
export const workflowInterceptorModules = [
  path.join(here, `workflow-interceptors${path.extname(fileURLToPath(import.meta.url))}`),
];

/** The api's and the worker's Temporal client: starts and signals carry the caller's trace. */
export function tracedClientInterceptors(tracing: Tracing | undefined): ClientInterceptors | undefined {
  if (!tracing) return undefined;
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] };
}

/** Activities continue the trace of the workflow that scheduled them. */
export function tracedActivityInterceptors(tracing: Tracing | undefined): ActivityInterceptorsFactory[] {
  if (!tracing) return [];
  return [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }) })];
}

/**
 * The sink the workflows' spans arrive by. A worker with tracing off still takes them (and drops
 * them): a workflow started by a traced api makes spans whatever this worker's settings.
 */
export function workflowSpanSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  if (tracing) return { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) };
  return { exporter: { export: { fn: () => undefined } } };
}
