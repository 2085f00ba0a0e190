/**
 * The widget session workflow's contract: what the api and the worker both import. Definitions
 * and types only (the workflow bundle includes this file).
 */
import { defineSignal } from '@temporalio/workflow';

export const widgetSessionWorkflowType = 'widgetSessionWorkflow';

/** How pushes are retried: the activity's retry policy, and the attempt after which a subscription is disabled. */
export interface WidgetPushPolicy {
  maxAttempts: number;
  initialIntervalMs: number;
  maximumIntervalMs: number;
}

export interface WidgetSessionInput {
  tenantId: string;
  sessionId: string;
  /** The inactivity deadline at opening (ISO); each message moves it (`widgetActivity`). */
  expiresAt: string;
  /** How long before the deadline `session.expiry_warning` is sent (0: none). */
  expiryWarningMs: number;
  push: WidgetPushPolicy;
  /** Carried by a run that continued as new: the deadline its expiry warning was already sent for. */
  warnedFor?: number;
}

export interface WidgetActivity {
  /** The new inactivity deadline the api stored (ISO). */
  expiresAt: string;
  /** The `message.complete` event to push. */
  eventId: number;
}

export const widgetActivitySignal = defineSignal<[WidgetActivity]>('widgetActivity');
/** The api has closed the session (DELETE): the workflow ends once its pushes are done. */
export const widgetCloseSignal = defineSignal('widgetClose');

export interface WidgetPushTarget {
  tenantId: string;
  subscriptionId: string;
  eventId: number;
  maxAttempts: number;
}
