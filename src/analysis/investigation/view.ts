/**
 * The view every hypothesis rule reads: the input restricted to the agents that ran, split into
 * own, related and all alerts, and the helpers that draft a hypothesis.
 */
import { clamp, lower, minutesBetween, ms, round2, textOf } from './text.js';
import {
  type AlertObservation,
  type ChangeObservation,
  type Hypothesis,
  type HypothesisKind,
  type InvestigationInput,
} from './types.js';

// ---------------------------------------------------------------------------------------------
// Views over the input

export interface View {
  input: InvestigationInput;
  service: string;
  first: string;
  own: AlertObservation[];
  ownFiring: AlertObservation[];
  /** Correlated alerts on the same service, its dependencies or its dependents. */
  related: AlertObservation[];
  /** Own and related alerts. */
  scope: AlertObservation[];
  /** Every alert seen (own and all correlated). */
  all: AlertObservation[];
  dependencyNames: Set<string>;
  deployments: ChangeObservation[];
  pushes: ChangeObservation[];
  /** Own alerts are flapping (toggling firing/resolved without lasting impact). */
  flapping: FlapStats | null;
}

interface FlapStats {
  alertName: string;
  toggles: number;
  firing: number;
  resolved: number;
  spanMinutes: number;
  sources: string[];
}
/** Drops what the agents that did not run would have contributed. */
export function restrictToRoles(input: InvestigationInput): InvestigationInput {
  const ran = new Set(input.roles);
  return {
    ...input,
    correlated: ran.has('alerts') || ran.has('topology') ? input.correlated : [],
    changes: input.changes.filter((c) => (c.kind === 'deployment' ? ran.has('deployment') : ran.has('code_change'))),
    topology: ran.has('topology')
      ? input.topology
      : { known: input.topology.known, serviceType: input.topology.serviceType, dependencies: [], dependents: [] },
    runbooks: ran.has('runbook') ? input.runbooks : [],
    patterns: ran.has('knowledge') ? (input.patterns ?? []) : [],
    findings: (input.findings ?? []).filter((f) => ran.has(f.agentRole)),
  };
}

export function flapStats(alerts: AlertObservation[]): FlapStats | null {
  const byName = new Map<string, AlertObservation[]>();
  for (const a of alerts) byName.set(a.alertName, [...(byName.get(a.alertName) ?? []), a]);
  let best: FlapStats | null = null;
  for (const [alertName, group] of byName) {
    const ordered = [...group].sort((x, y) => ms(x.occurredAt) - ms(y.occurredAt) || (x.eventId < y.eventId ? -1 : 1));
    let toggles = 0;
    for (let i = 1; i < ordered.length; i++) if (ordered[i]!.status !== ordered[i - 1]!.status) toggles++;
    const firing = ordered.filter((a) => a.status === 'firing').length;
    const resolved = ordered.length - firing;
    if (resolved < 2 || firing < 3) continue;
    const stats = {
      alertName,
      toggles,
      firing,
      resolved,
      spanMinutes: minutesBetween(ordered[0]!.occurredAt, ordered[ordered.length - 1]!.occurredAt),
      sources: ordered.map((a) => a.eventId),
    };
    if (!best || stats.toggles > best.toggles) best = stats;
  }
  return best;
}

export function buildView(input: InvestigationInput): View {
  const service = input.incident.service ?? 'the affected service';
  const serviceLower = lower(input.incident.service);
  const dependencyNames = new Set(input.topology.dependencies.map((d) => d.name.toLowerCase()));
  const dependentNames = new Set(input.topology.dependents.map((d) => d.name.toLowerCase()));
  const related = input.correlated.filter((a) => {
    const s = lower(a.service);
    return s !== '' && (s === serviceLower || dependencyNames.has(s) || dependentNames.has(s));
  });
  const ownFiring = input.alerts.filter((a) => a.status === 'firing');
  // A skill's answer reads as a signal of the incident's own service.
  const found: AlertObservation[] = (input.findings ?? []).map((f) => ({
    eventId: f.sourceId,
    provider: 'skill',
    incidentId: input.incident.incidentId,
    alertName: f.skill,
    service: input.incident.service,
    severity: null,
    status: 'firing',
    occurredAt: f.occurredAt,
    title: f.skill,
    text: f.text,
    labels: {},
  }));
  return {
    input,
    service,
    first: input.incident.firstAlertAt,
    own: input.alerts,
    ownFiring,
    related,
    scope: [...input.alerts, ...related, ...found],
    all: [...input.alerts, ...input.correlated, ...found],
    dependencyNames,
    deployments: input.changes.filter((c) => c.kind === 'deployment'),
    pushes: input.changes.filter((c) => c.kind === 'code_change'),
    flapping: flapStats(input.alerts),
  };
}

/** The value of the first of `keys` (in their order; label names case-insensitive) any alert carries. */
export function firstLabel(alerts: AlertObservation[], keys: string[]): string | undefined {
  for (const key of keys) {
    for (const a of alerts) {
      for (const [k, value] of Object.entries(a.labels)) {
        if (k.toLowerCase() === key && value.trim() !== '') return value.trim();
      }
    }
  }
  return undefined;
}

/** The first capture group of `re` in the alerts' texts. */
export function firstCapture(alerts: AlertObservation[], re: RegExp): string | undefined {
  for (const a of alerts) {
    const m = textOf(a).match(re);
    if (m?.[1]) return m[1].replace(/[.,;:'"`)]+$/, '');
  }
  return undefined;
}

export const matching = (alerts: AlertObservation[], re: RegExp) => alerts.filter((a) => re.test(textOf(a)));
export const servicesOf = (alerts: AlertObservation[]) => [
  ...new Set(alerts.map((a) => a.service).filter((s): s is string => !!s)),
];

export function draft(
  kind: HypothesisKind,
  fields: Omit<Hypothesis, 'kind' | 'status' | 'reason' | 'contextAdjustment'>,
): Hypothesis {
  return {
    kind,
    status: 'discarded',
    reason: '',
    contextAdjustment: 0,
    ...fields,
    score: round2(clamp(fields.score, 0, 0.95)),
  };
}
