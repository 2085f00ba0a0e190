/** What the api asks of a widget session's workflow (workflow id = sessionId) through the Temporal client. */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  widgetActivitySignal,
  widgetCloseSignal,
  widgetSessionWorkflowType,
  type WidgetActivity,
  type WidgetSessionInput,
} from './session-messages.js';

export interface WidgetSessionPort {
  /** Starts the session's workflow; one already started counts as started. */
  start(input: WidgetSessionInput): Promise<void>;
  /** A message moved the deadline and has an event to push; 'gone' when the workflow has ended. */
  activity(sessionId: string, activity: WidgetActivity): Promise<'delivered' | 'gone'>;
  close(sessionId: string): Promise<'delivered' | 'gone'>;
}

async function unlessGone(call: () => Promise<void>): Promise<'delivered' | 'gone'> {
  try {
    await call();
    return 'delivered';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'gone';
    throw err;
  }
}

export function createWidgetSessionPort(client: Client, taskQueue: string): WidgetSessionPort {
  return {
    async start(input) {
      try {
        await client.workflow.start(widgetSessionWorkflowType, {
          workflowId: input.sessionId,
          taskQueue,
          args: [input],
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },
    activity: (sessionId, activity) =>
      unlessGone(() => client.workflow.getHandle(sessionId).signal(widgetActivitySignal, activity)),
    close: (sessionId) => unlessGone(() => client.workflow.getHandle(sessionId).signal(widgetCloseSignal)),
  };
}
