/** Builders of the analyzer's input for its unit tests: one incident on checkout-api at 09:30 UTC. */
import {
  type AlertObservation,
  type ChangeObservation,
  type DependencyObservation,
  type InvestigationInput,
} from '../../src/analysis/investigation/index.js';
import { agentRoles } from '../../src/analysis/types.js';

export const FIRST = '2024-05-14T09:30:00.000Z';
export const minutes = (m: number) => new Date(Date.parse(FIRST) + m * 60_000).toISOString();
let ids = 0;

export function alert(overrides: Partial<AlertObservation> & { text: string }): AlertObservation {
  ids++;
  return {
    eventId: `evt_${ids}`,
    provider: 'alertmanager',
    incidentId: 'inc_1',
    alertName: 'HighErrorRate',
    service: 'checkout-api',
    severity: 'high',
    status: 'firing',
    occurredAt: FIRST,
    title: 'HighErrorRate',
    labels: {},
    ...overrides,
  };
}

export function deploy(overrides: Partial<ChangeObservation> = {}): ChangeObservation {
  ids++;
  return {
    eventId: `evt_${ids}`,
    kind: 'deployment',
    changeType: 'deploy',
    matchedBy: 'service',
    paths: [],
    flag: null,
    version: null,
    author: null,
    provider: 'github',
    service: 'checkout-api',
    repository: 'example-shop/checkout-api',
    occurredAt: minutes(-12),
    deploymentId: '4242',
    sha: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d',
    ref: 'main',
    environment: 'production',
    state: 'success',
    description: null,
    commits: [],
    title: 'Deployment of example-shop/checkout-api@1a2b3c4 to production: success',
    hops: 0,
    ...overrides,
  };
}

export function dependency(overrides: Partial<DependencyObservation> & { name: string }): DependencyObservation {
  return {
    type: 'database',
    hops: 1,
    alerting: false,
    alertCount: 0,
    firstAlertAt: null,
    alertNames: [],
    alertTexts: [],
    alertingDependents: [],
    ...overrides,
  };
}

export function input(overrides: Partial<InvestigationInput> = {}): InvestigationInput {
  return {
    incident: {
      incidentId: 'inc_1',
      title: '[HighErrorRate] checkout-api 5xx above 5%',
      description: '5xx responses are 9% of checkout-api requests',
      service: 'checkout-api',
      severity: 'high',
      firstAlertAt: FIRST,
      occurrenceCount: 1,
      recovered: false,
    },
    roles: [...agentRoles],
    alerts: [alert({ text: '5xx responses are 9% of checkout-api requests (threshold 5%)' })],
    correlated: [],
    changes: [],
    topology: { known: true, serviceType: 'api', dependencies: [], dependents: [] },
    runbooks: [],
    context: [],
    ...overrides,
  };
}

/** checkout-api's topology with these dependencies and no dependents. */
export function topologyWith(...dependencies: DependencyObservation[]): InvestigationInput['topology'] {
  return { known: true, serviceType: 'api', dependencies, dependents: [] };
}
