/** Every error code the api answers with, and its HTTP status: the one table. */
export const errorStatus = {
  validation_error: 400,
  range_exceeds_retention: 400,
  comment_required: 400,
  // Sign-in (docs/sign-in.md): a callback that cannot be trusted or completed.
  invalid_state: 400,
  invalid_grant: 400,
  tenant_choice_required: 400,
  // An integration's provider refused the credentials given to connect it.
  integration_rejected: 400,
  // A payment provider's webhook whose Stripe-Signature is missing, wrong or outside the replay window.
  invalid_signature: 400,
  unauthorized: 401,
  forbidden: 403,
  access_denied: 403,
  email_not_verified: 403,
  no_membership: 403,
  not_found: 404,
  incident_not_found: 404,
  triage_not_started: 404,
  skill_not_found: 404,
  approval_not_found: 404,
  session_not_found: 404,
  provider_not_configured: 404,
  member_not_found: 404,
  integration_not_found: 404,
  // A request body that did not arrive in time (ADR 0246); not in the interface's list, which has no such case.
  request_timeout: 408,
  conflict: 409,
  skill_name_conflict: 409,
  approval_expired: 409,
  already_decided: 409,
  last_admin: 409,
  integration_not_configured: 409,
  // Billing (docs/billing.md): no payment provider (self-hosted: the operator's CLI applies changes),
  // a downgrade below this period's use, and a plan sold only by arrangement.
  billing_not_configured: 409,
  usage_exceeds_plan: 409,
  plan_by_arrangement: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  event_quota_exceeded: 429,
  quota_exceeded: 429,
  internal_error: 500,
  // A sign-in or integration provider that did not answer, or answered what it should not.
  provider_unavailable: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

const defaultMessages: Partial<Record<ErrorCode, string>> = {
  unauthorized: 'Missing, invalid or expired credentials',
  forbidden: 'Your role does not allow this operation',
  not_found: 'Resource not found',
  internal_error: 'Internal server error',
};

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: unknown,
  ) {
    super(message ?? defaultMessages[code] ?? code.replace(/_/g, ' '));
    this.name = 'AppError';
    this.status = errorStatus[code];
  }
}

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  details?: unknown;
}
