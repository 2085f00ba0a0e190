/**
 * The workflow side of tracing, bundled with the workflows (interceptorModules). Temporal's
 * interceptors act only in a workflow started with a trace context in its headers (the api's
 * client adds one when tracing is on): others run as if there were none, so tracing off costs
 * nothing and histories written without it replay unchanged. The choice comes from the start
 * event's headers, so it is the same on every replay.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptors } from '@temporalio/workflow';

/** The header Temporal's client interceptor writes the trace context to. */
const TRACE_HEADER = '_tracer-data';

export const interceptors = (): WorkflowInterceptors => {
  let inbound: OpenTelemetryInboundInterceptor | undefined;
  let outbound: OpenTelemetryOutboundInterceptor | undefined;
  let internals: OpenTelemetryInternalsInterceptor | undefined;
  return {
    inbound: [
      {
        execute(input, next) {
          if (input.headers[TRACE_HEADER] === undefined) return next(input);
          // Made only now: their tracer registers a context manager in this workflow's sandbox.
          inbound = new OpenTelemetryInboundInterceptor();
          outbound = new OpenTelemetryOutboundInterceptor();
          internals = new OpenTelemetryInternalsInterceptor();
          return inbound.execute(input, next);
        },
        handleSignal: (input, next) => (inbound ? inbound.handleSignal(input, next) : next(input)),
        handleUpdate: (input, next) => (inbound ? inbound.handleUpdate(input, next) : next(input)),
        validateUpdate: (input, next) => (inbound ? inbound.validateUpdate(input, next) : next(input)),
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => (outbound ? outbound.scheduleActivity(input, next) : next(input)),
        scheduleLocalActivity: (input, next) => (outbound ? outbound.scheduleLocalActivity(input, next) : next(input)),
        startChildWorkflowExecution: (input, next) =>
          outbound ? outbound.startChildWorkflowExecution(input, next) : next(input),
        continueAsNew: (input, next) => (outbound ? outbound.continueAsNew(input, next) : next(input)),
        signalWorkflow: (input, next) => (outbound ? outbound.signalWorkflow(input, next) : next(input)),
        getLogAttributes: (input, next) => (outbound ? outbound.getLogAttributes(input, next) : next(input)),
      },
    ],
    internals: [
      {
        dispose(input, next) {
          // Temporal's own is async but calls next at once (it only stops its context manager).
          if (internals) void internals.dispose(input, next);
          else next(input);
        },
      },
    ],
  };
};
