/**
 * Change deliveries of the other tools, in their documented formats: LaunchDarkly (the audit-log
 * entry its webhooks post), Unleash (the event format its webhook addon posts without a body
 * template), Flagsmith (environment webhook, FLAG_UPDATED), Flux (notification-controller's event to
 * a `generic` provider), Argo CD (argocd-notifications with our template) and the generic change.
 */
import type { Delivery } from '../types.js';
import { epochMs, hex, iso, numId } from './time.js';

type Extra = Pick<Delivery, 'note'>;

/** LaunchDarkly: the audit-log entry its webhook posts when a flag changes in an environment. */
export function launchDarkly(
  args: {
    flag: string;
    flagName?: string;
    project?: string;
    environment?: string;
    action: 'updateOn' | 'updateFallthrough' | 'updateRules' | 'updateOffVariation' | 'updateTargets';
    /** The markdown description LaunchDarkly writes ("- Turned off the flag"…). */
    description: string;
    titleVerb: string;
    at: number;
    member?: { email: string; firstName: string; lastName: string };
    comment?: string;
  },
  extra: Extra = {},
): Delivery {
  const project = args.project ?? 'default';
  const env = args.environment ?? 'production';
  const member = args.member ?? { email: 'priya.nair@example-shop.com', firstName: 'Priya', lastName: 'Nair' };
  const id = hex(`${args.flag}:${args.at}`, 24);
  const memberId = hex(member.email, 24);
  const name = args.flagName ?? args.flag;
  return {
    provider: 'launchdarkly',
    body: {
      _links: {
        canonical: { href: `/api/v2/flags/${project}/${args.flag}`, type: 'application/json' },
        parent: { href: '/api/v2/auditlog', type: 'application/json' },
        self: { href: `/api/v2/auditlog/${id}`, type: 'application/json' },
        site: { href: `/${project}/${env}/features/${args.flag}`, type: 'text/html' },
      },
      _id: id,
      _accountId: hex('account', 24),
      date: epochMs(args.at),
      accesses: [{ action: args.action, resource: `proj/${project}:env/${env}:flag/${args.flag}` }],
      kind: 'flag',
      name,
      description: args.description,
      shortDescription: args.description.replace(/^- /, ''),
      ...(args.comment ? { comment: args.comment } : {}),
      member: {
        _links: {
          parent: { href: '/api/v2/members', type: 'application/json' },
          self: { href: `/api/v2/members/${memberId}`, type: 'application/json' },
        },
        _id: memberId,
        email: member.email,
        firstName: member.firstName,
        lastName: member.lastName,
      },
      titleVerb: args.titleVerb,
      title: `[${member.firstName} ${member.lastName}](mailto:${member.email}) ${args.titleVerb} [${name}](https://app.launchdarkly.com/${project}/${env}/features/${args.flag}) in \`${env[0]!.toUpperCase()}${env.slice(1)}\``,
      target: {
        _links: { canonical: { href: `/api/v2/flags/${project}/${args.flag}`, type: 'application/json' } },
        name,
        resources: [`proj/${project}:env/${env}:flag/${args.flag}`],
      },
      currentVersion: 0,
      previousVersion: 0,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Unleash: the event its webhook addon posts with no body template (the Unleash event format). */
export function unleash(
  args: {
    type:
      | 'feature-environment-enabled'
      | 'feature-environment-disabled'
      | 'feature-strategy-update'
      | 'feature-strategy-add';
    feature: string;
    project?: string;
    environment?: string;
    at: number;
    createdBy?: string;
    data?: Record<string, unknown>;
    preData?: Record<string, unknown> | null;
  },
  extra: Extra = {},
): Delivery {
  const id = numId(`${args.feature}:${args.at}`, 6);
  return {
    provider: 'unleash',
    body: {
      id,
      type: args.type,
      createdBy: args.createdBy ?? 'jonas.berg@example-shop.com',
      createdAt: iso(args.at),
      createdByUserId: 17,
      data: args.data ?? null,
      preData: args.preData ?? null,
      tags: [],
      featureName: args.feature,
      project: args.project ?? 'default',
      environment: args.environment ?? 'production',
      label: args.type === 'feature-environment-disabled' ? 'Flag disabled' : 'Flag updated',
      summary: null,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Flagsmith: an environment webhook, FLAG_UPDATED with the new and previous state. */
export function flagsmith(
  args: {
    feature: string;
    description?: string;
    enabled: boolean;
    wasEnabled: boolean;
    value?: string | number | null;
    previousValue?: string | number | null;
    at: number;
    changedBy?: string;
    environment?: string;
  },
  extra: Extra = {},
): Delivery {
  const feature = {
    created_date: '2025-06-02T09:14:51.226718Z',
    default_enabled: false,
    description: args.description ?? null,
    id: numId(args.feature, 5),
    initial_value: null,
    name: args.feature,
    project: { id: 412, name: 'Example Shop' },
    type: args.value === undefined ? 'STANDARD' : 'CONFIG',
  };
  const state = (enabled: boolean, value: unknown) => ({
    enabled,
    environment: { id: 23, name: args.environment ?? 'Production' },
    feature,
    feature_segment: null,
    feature_state_value: value ?? null,
    id: numId(`${args.feature}:state`, 6),
    identity: null,
    identity_identifier: null,
  });
  return {
    provider: 'flagsmith',
    body: {
      data: {
        changed_by: args.changedBy ?? 'Lena Fischer',
        new_state: state(args.enabled, args.value),
        previous_state: state(args.wasEnabled, args.previousValue),
        timestamp: iso(args.at),
      },
      event_type: 'FLAG_UPDATED',
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Flux: notification-controller's event as a `generic` provider posts it. */
export function flux(
  args: {
    kind: 'Kustomization' | 'HelmRelease';
    name: string;
    namespace: string;
    reason: string;
    message: string;
    severity?: 'info' | 'error';
    revision?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  const helm = args.kind === 'HelmRelease';
  return {
    provider: 'flux',
    headers: { 'gotk-component': helm ? 'helm-controller' : 'kustomize-controller' },
    body: {
      involvedObject: {
        apiVersion: helm ? 'helm.toolkit.fluxcd.io/v2' : 'kustomize.toolkit.fluxcd.io/v1',
        kind: args.kind,
        name: args.name,
        namespace: args.namespace,
        uid: `${hex(args.name, 8)}-${hex(args.name + '1', 4)}-4${hex(args.name + '2', 3)}-b${hex(args.name + '3', 3)}-${hex(args.name + '4', 12)}`,
      },
      severity: args.severity ?? 'info',
      timestamp: iso(args.at),
      message: args.message,
      reason: args.reason,
      metadata: args.revision ? { [`${helm ? 'helm' : 'kustomize'}.toolkit.fluxcd.io/revision`]: args.revision } : {},
      reportingController: helm ? 'helm-controller' : 'kustomize-controller',
      reportingInstance: `${helm ? 'helm' : 'kustomize'}-controller-7f9c6d5b8-${hex(args.name, 5)}`,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/**
 * Argo CD: the argocd-notifications webhook body the template of docs/integrations/argocd.md
 * renders (the Application's name, project, destination, source, sync, health, operation state).
 */
export function argocd(
  args: {
    app: string;
    project?: string;
    namespace: string;
    repoURL: string;
    path?: string;
    chart?: string;
    targetRevision?: string;
    revision: string;
    phase?: 'Succeeded' | 'Failed' | 'Error' | 'Running';
    health?: 'Healthy' | 'Progressing' | 'Degraded';
    message?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  return {
    provider: 'argocd',
    body: {
      app: args.app,
      project: args.project ?? 'default',
      // toJson of the Application's spec structs: unset fields are left out, a missing value is null.
      destination: { server: 'https://kubernetes.default.svc', namespace: args.namespace },
      source: {
        repoURL: args.repoURL,
        ...(args.path ? { path: args.path } : {}),
        targetRevision: args.targetRevision ?? 'HEAD',
        ...(args.chart ? { chart: args.chart } : {}),
      },
      sync: { revision: args.revision, status: args.phase === 'Failed' ? 'OutOfSync' : 'Synced' },
      health: { status: args.health ?? 'Healthy', message: null },
      operationState: {
        phase: args.phase ?? 'Succeeded',
        message: args.message ?? 'successfully synced (all tasks run)',
        startedAt: iso(args.at - 1),
        finishedAt: iso(args.at),
      },
      argocdUrl: 'https://argocd.example-shop.com',
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** The generic webhook's change shape (docs/integrations/generic.md): config pushes, scripts, tools without an integration. */
export function genericChange(
  args: {
    kind: 'deploy' | 'config' | 'flag' | 'infrastructure' | 'dependency' | string;
    service: string;
    title: string;
    description?: string;
    author?: string;
    paths?: string[];
    url?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  return {
    provider: 'generic',
    headers: { 'x-delivery-id': `change-${hex(`${args.service}:${args.title}:${args.at}`, 16)}` },
    body: {
      type: 'change',
      change: {
        kind: args.kind,
        service: args.service,
        title: args.title,
        ...(args.description ? { description: args.description } : {}),
        author: args.author ?? 'deploy-bot',
        environment: 'production',
        ...(args.paths ? { paths: args.paths } : {}),
        occurredAt: iso(args.at),
        ...(args.url ? { url: args.url } : {}),
      },
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}
