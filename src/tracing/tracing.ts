/**
 * OpenTelemetry tracing of one process (api or worker), off unless `OTEL_TRACES_EXPORTER` names
 * an exporter (ADR 0278). Off, nothing is created: no provider, no interceptor, no middleware.
 */
import { context, propagation, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface Tracing {
  tracer: Tracer;
  /** Where finished spans go (the worker hands it the workflows' spans too). */
  processor: SpanProcessor;
  resource: Resource;
  /** Sends the spans still buffered; called when the process stops. */
  shutdown(): Promise<void>;
}

export type TracingEnv = Record<string, string | undefined>;

/** The exporter `OTEL_TRACES_EXPORTER` names; undefined when tracing is off. */
function exporterOf(env: TracingEnv): SpanExporter | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const name = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() ?? '';
  if (name === '' || name === 'none') return undefined;
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS and _TIMEOUT itself.
  if (name === 'otlp') return new OTLPTraceExporter();
  if (name === 'console') return new ConsoleSpanExporter();
  throw new Error(`OTEL_TRACES_EXPORTER must be otlp, console or none (got "${env.OTEL_TRACES_EXPORTER}")`);
}

let propagationInstalled = false;

/** Trace context crosses awaits (AsyncLocalStorage) and HTTP and Temporal headers (W3C traceparent). */
function installPropagation() {
  if (propagationInstalled) return;
  propagationInstalled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/**
 * The tracing of a process named `serviceName` (unless `OTEL_SERVICE_NAME` says otherwise), or
 * undefined when off. `exporter` (tests) turns it on and replaces the environment's choice.
 */
export function createTracing(
  serviceName: string,
  env: TracingEnv = process.env,
  exporter?: SpanExporter,
): Tracing | undefined {
  const chosen = exporter ?? exporterOf(env);
  if (!chosen) return undefined;
  installPropagation();
  const resource = envDetectorSync
    .detect()
    .merge(new Resource({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || serviceName }));
  // Batched towards a collector; one at a time when a test reads them back at once.
  const processor = exporter ? new SimpleSpanProcessor(chosen) : new BatchSpanProcessor(chosen);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  return {
    tracer: provider.getTracer('incident-investigation'),
    processor,
    resource,
    shutdown: () => provider.shutdown(),
  };
}
