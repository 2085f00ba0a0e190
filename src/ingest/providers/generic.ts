/**
## Generic webhook

For tools without a dedicated integration. `POST` JSON to the generic webhook URL.

The body is either **one alert object** or **`{ "alerts": [ ... ] }`** with 1–500 alert objects.

| Field         | Type                        | Required | Notes |
|---------------|-----------------------------|----------|-------|
| `name`        | string, 1–200 characters    | yes      | The alert's name, e.g. `HighErrorRate`. |
| `status`      | `"firing"` \| `"resolved"`  | no       | Default `"firing"`. |
| `severity`    | string                      | no       | `critical`/`crit`/`fatal`/`emergency`/`page`/`p1`/`sev1`/`disaster` → critical; `high`/`error`/`err`/`major`/`p2`/`sev2` → high; `warning`/`warn`/`medium`/`moderate`/`average`/`p3`/`sev3` → medium; `low`/`info`/`informational`/`minor`/`debug`/`notice`/`p4`/`p5`/`sev4`/`sev5` → low (any case). Anything else, or none → medium. |
| `service`     | string, 1–200 characters    | no       | Default: the first of the labels `service`, `service_name`, `app`, `application`, `job`, `component`. |
| `summary`     | string                      | no       | One line; the incident title becomes `[name] summary`. |
| `description` | string                      | no       | Free text. |
| `labels`      | object of string → string   | no       | Kept with the alert and listed in its description. |
| `fingerprint` | string, 1–200 characters    | no       | Identifies the alert across notifications: send the same value when it resolves. Default: a hash of `name`, `service` and `labels`. |
| `startsAt`    | timestamp                   | no       | When the alert started. Default: the time of receipt. |
| `endsAt`      | timestamp                   | no       | When a `resolved` alert ended. Default: the time of receipt. |

Timestamps are ISO-8601 strings (`2024-05-14T09:30:00Z`) or Unix epoch seconds or milliseconds
(as a number or a numeric string). Other fields are accepted and kept as evidence.

Send a delivery id in the `X-Delivery-Id` (or `Idempotency-Key`) header, the same on every retry
of one delivery, so that retries can be recognised.

```json
{
  "name": "HighErrorRate",
  "severity": "critical",
  "service": "checkout",
  "summary": "5xx rate above 5% for 10 minutes",
  "labels": { "env": "production", "region": "eu-west-1" },
  "fingerprint": "checkout-high-error-rate",
  "startsAt": "2024-05-14T09:30:00Z"
}
```

An invalid body is rejected with a list of `{ "path", "message" }` naming each bad field.

**A change** (deploy, config apply, flag flip, …: evidence for investigations, never an incident)
is `{ "type": "change", "change": { ... } }`; its fields are in docs/integrations/generic.md
(`genericChange` below reads it).

A label `test: "true"` marks a test alert (recorded, never an incident). A label naming a commit or
deploy (`commit`, `commit_sha`, `git_sha`, `git_commit`, `revision`, `deployment_id`, `deploy_id`)
gives the alert that deploy as an origin, shared with every other alert naming it.
*/
import { z } from 'zod';
import {
  hashFingerprint,
  makeDescription,
  makeTitle,
  MAX_ALERTS_PER_DELIVERY,
  mapSeverity,
  nonEmpty,
  parseTime,
  parseWith,
  serviceFromLabels,
  toDate,
  toolFingerprint,
} from '../normalize.js';
import { attribute } from '../attribution.js';
import { changeTypes, type ChangeType } from '../../analysis/investigation/types.js';
import type { NormalizedAlert, NormalizedChange, NormalizedEvent, WebhookProvider } from '../types.js';
import { change, labelsOf, pathsLabel } from './change-common.js';
import { deployOrigins, marked, testLabel } from './markers.js';

const timestamp = z
  .union([z.string(), z.number()])
  .refine((value) => toDate(value) !== null, 'must be an ISO-8601 timestamp or Unix epoch seconds / milliseconds');

const genericAlertSchema = z.looseObject({
  name: z
    .string({ error: (issue) => (issue.input === undefined ? 'name is required' : 'name must be a string') })
    .trim()
    .min(1, 'name must not be blank')
    .max(200, 'name must be at most 200 characters'),
  status: z.enum(['firing', 'resolved']).default('firing'),
  severity: z.string().optional(),
  service: z.string().trim().min(1).max(200).optional(),
  summary: z.string().optional(),
  description: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  fingerprint: z.string().trim().min(1).max(200).optional(),
  startsAt: timestamp.optional(),
  endsAt: timestamp.optional(),
});
type GenericAlert = z.output<typeof genericAlertSchema>;

const genericBatchSchema = z.looseObject({
  alerts: z
    .array(genericAlertSchema)
    .min(1, 'alerts must contain at least one alert')
    .max(MAX_ALERTS_PER_DELIVERY, `at most ${MAX_ALERTS_PER_DELIVERY} alerts per delivery`),
});

function normalize(alert: GenericAlert, raw: unknown): NormalizedAlert {
  const labels = alert.labels ?? {};
  const { service, attribution } = attribute({ tool: 'generic', service: alert.service, labels });
  const summary = nonEmpty(alert.summary);
  const now = new Date();
  const normalized: NormalizedAlert = {
    kind: 'alert',
    status: alert.status,
    attribution,
    fingerprint: alert.fingerprint
      ? toolFingerprint('generic', alert.fingerprint)
      : hashFingerprint('generic', alert.name, alert.service ?? serviceFromLabels(labels), labels),
    alertName: alert.name,
    service,
    severity: mapSeverity(alert.severity),
    title: makeTitle(alert.name, summary),
    description: makeDescription([summary, alert.description], labels),
    labels,
    occurredAt: parseTime(alert.status === 'resolved' ? alert.endsAt : alert.startsAt, now),
    raw,
  };
  return marked(normalized, deployOrigins(service, [labels]), testLabel(labels));
}

/** How each kind of change counts: `deployment` when it changed what runs (ADR 0266). */
const changeKinds: Record<ChangeType, NormalizedChange['kind']> = {
  deploy: 'deployment',
  ci_workflow: 'deployment',
  gitops: 'deployment',
  feature_flag: 'deployment',
  config: 'deployment',
  infrastructure: 'deployment',
  release: 'code_change',
  pull_request: 'code_change',
  push: 'code_change',
  dependency: 'code_change',
};

const bounded = (field: string, max: number) =>
  z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(1, `${field} must not be blank`)
    .max(max, `${field} must be at most ${max} characters`);

const genericChangeSchema = z.looseObject({
  type: z.literal('change'),
  change: z.looseObject(
    {
      kind: z.enum(changeTypes, { error: `kind must be one of ${changeTypes.join(', ')}` }),
      title: bounded('title', 200),
      service: bounded('service', 200).optional(),
      services: z.array(bounded('services[]', 200)).max(20, 'at most 20 services').optional(),
      repository: bounded('repository', 200)
        .regex(/^[\w.-]+\/[\w.-]+$/, 'repository must be owner/name')
        .optional(),
      paths: z.array(bounded('paths[]', 500)).max(200, 'at most 200 paths').optional(),
      version: bounded('version', 200).optional(),
      sha: bounded('sha', 200).optional(),
      ref: bounded('ref', 200).optional(),
      flag: bounded('flag', 200).optional(),
      state: bounded('state', 100).optional(),
      description: z.string().max(4000, 'description must be at most 4000 characters').optional(),
      author: bounded('author', 200).optional(),
      environment: bounded('environment', 200).optional(),
      occurredAt: timestamp.optional(),
      url: z.url({ error: 'url must be an absolute URL' }).max(2000).optional(),
    },
    { error: (issue) => (issue.input === undefined ? 'change is required' : 'change must be an object') },
  ),
});

/** A body that asks to be read as a change (`"type": "change"`), valid or not. */
function isChangeBody(body: unknown): boolean {
  return (
    typeof body === 'object' && body !== null && !Array.isArray(body) && (body as { type?: unknown }).type === 'change'
  );
}

function genericChange(body: unknown): NormalizedChange {
  const c = parseWith(genericChangeSchema, body, 'generic').change;
  const services = [...new Set([...(c.service ? [c.service] : []), ...(c.services ?? [])])];
  const labels = labelsOf({
    change_type: c.kind,
    repository: c.repository,
    sha: c.sha,
    ref: c.ref,
    environment: c.environment,
    state: c.state,
    version: c.version,
    flag: c.flag,
    author: c.author,
    paths: c.paths ? pathsLabel(c.paths) : undefined,
    services: services.length > 1 ? services.join(',') : undefined,
  });
  return change(changeKinds[c.kind], {
    service: services[0] ?? null,
    title: c.title,
    parts: [c.description, c.url && `Details: ${c.url}`],
    labels,
    occurredAt: parseTime(c.occurredAt, new Date()),
    raw: (body as { change: unknown }).change,
  });
}

export const genericProvider: WebhookProvider = {
  name: 'generic',
  parse(body, header) {
    const deliveryId = nonEmpty(header('x-delivery-id')) ?? nonEmpty(header('idempotency-key'));
    let events: NormalizedEvent[];
    if (isChangeBody(body)) {
      events = [genericChange(body)];
    } else if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'alerts' in body) {
      const payload = parseWith(genericBatchSchema, body, 'generic');
      const raw = (body as { alerts: unknown[] }).alerts;
      events = payload.alerts.map((alert, i) => normalize(alert, raw[i] ?? alert));
    } else {
      events = [normalize(parseWith(genericAlertSchema, body, 'generic'), body)];
    }
    return deliveryId ? { events, deliveryId } : { events };
  },
};
