/**
 * The static catalog of integrations served by `GET /v1/integrations/catalog`.
 *
 * OAuth scopes are the providers' own scope strings, requested verbatim in the authorization
 * URL; `requiredFields` name the credential fields an `api_key` connection form asks for.
 * Webhook-only providers push to us and need neither.
 */

export const integrationCategories = ['monitoring', 'code', 'ticketing', 'communication', 'cloud'] as const;
export type IntegrationCategory = (typeof integrationCategories)[number];
export type IntegrationAuthType = 'oauth2' | 'api_key' | 'webhook_only';

export interface IntegrationDefinition {
  /** Unique snake_case key, e.g. `github`, `pagerduty`. */
  provider: string;
  displayName: string;
  category: IntegrationCategory;
  /** One sentence on what connecting it gives the incident service. */
  description: string;
  authType: IntegrationAuthType;
  /** The provider's real OAuth scope strings for `oauth2` providers; `[]` otherwise. */
  scopes: string[];
  /** Credential field names (camelCase) for `api_key` providers; `[]` otherwise. */
  requiredFields: string[];
}

const definitions: IntegrationDefinition[] = [
  // --- monitoring ---
  {
    provider: 'alertmanager',
    displayName: 'Prometheus Alertmanager',
    category: 'monitoring',
    description:
      'Receives firing and resolved Prometheus alerts through an Alertmanager webhook receiver so they can open and enrich incidents.',
    authType: 'webhook_only',
    scopes: [],
    requiredFields: [],
  },
  {
    provider: 'datadog',
    displayName: 'Datadog',
    category: 'monitoring',
    description:
      'Reads monitors, metrics, logs and events from your Datadog site to gather evidence during an investigation.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['apiKey', 'applicationKey', 'site'],
  },
  {
    provider: 'grafana',
    displayName: 'Grafana',
    category: 'monitoring',
    description:
      'Queries dashboards, alert rules and data sources with a Grafana service account token to correlate panels with an incident.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['baseUrl', 'serviceAccountToken'],
  },
  {
    provider: 'new_relic',
    displayName: 'New Relic',
    category: 'monitoring',
    description:
      'Runs NerdGraph and NRQL queries against your New Relic account to pull APM, infrastructure and alert data into an investigation.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['userApiKey', 'accountId', 'region'],
  },
  {
    provider: 'opsgenie',
    displayName: 'Opsgenie',
    category: 'monitoring',
    description: 'Reads Opsgenie alerts and on-call schedules and adds notes to alerts as an investigation progresses.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['apiKey', 'region'],
  },
  {
    provider: 'pagerduty',
    displayName: 'PagerDuty',
    category: 'monitoring',
    description:
      'Syncs PagerDuty incidents, services and on-call responders and posts investigation findings back to the incident.',
    authType: 'oauth2',
    scopes: ['incidents.read', 'incidents.write', 'services.read', 'oncalls.read', 'schedules.read'],
    requiredFields: [],
  },
  {
    provider: 'sentry',
    displayName: 'Sentry',
    category: 'monitoring',
    description:
      'Reads Sentry issues, events and stack traces from the projects in your Sentry organization to link application errors to an incident.',
    authType: 'oauth2',
    scopes: ['org:read', 'project:read', 'event:read'],
    requiredFields: [],
  },

  // --- code ---
  {
    provider: 'bitbucket',
    displayName: 'Bitbucket Cloud',
    category: 'code',
    description:
      'Reads Bitbucket Cloud repositories, pull requests and pipeline runs to find the changes deployed before an incident.',
    authType: 'oauth2',
    scopes: ['account', 'repository', 'pullrequest', 'pipeline'],
    requiredFields: [],
  },
  {
    provider: 'github',
    displayName: 'GitHub',
    category: 'code',
    description:
      'Reads GitHub repositories, commits, pull requests and deployments across your organization to find suspect changes.',
    authType: 'oauth2',
    scopes: ['repo', 'read:org'],
    requiredFields: [],
  },
  {
    provider: 'gitlab',
    displayName: 'GitLab',
    category: 'code',
    description:
      'Reads GitLab projects, merge requests, pipelines and repository contents to correlate recent changes with an incident.',
    authType: 'oauth2',
    scopes: ['read_api', 'read_repository'],
    requiredFields: [],
  },

  // --- ticketing ---
  {
    provider: 'jira',
    displayName: 'Jira',
    category: 'ticketing',
    description:
      'Creates and updates Jira Cloud issues for incidents and follow-up actions and reads linked issues for context.',
    authType: 'oauth2',
    scopes: ['read:jira-work', 'write:jira-work', 'read:jira-user', 'offline_access'],
    requiredFields: [],
  },
  {
    provider: 'linear',
    displayName: 'Linear',
    category: 'ticketing',
    description: 'Creates Linear issues for incident follow-ups and reads related issues and projects for context.',
    authType: 'oauth2',
    scopes: ['read', 'write'],
    requiredFields: [],
  },
  {
    provider: 'servicenow',
    displayName: 'ServiceNow',
    category: 'ticketing',
    description:
      'Opens and updates ServiceNow incident records through the instance REST API and reads related change requests.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['instanceUrl', 'apiKey'],
  },
  {
    provider: 'zendesk',
    displayName: 'Zendesk',
    category: 'ticketing',
    description: 'Reads customer-reported Zendesk tickets that match an incident and adds status updates to them.',
    authType: 'oauth2',
    scopes: ['read', 'write'],
    requiredFields: [],
  },

  // --- communication ---
  {
    provider: 'discord',
    displayName: 'Discord',
    category: 'communication',
    description:
      'Posts incident updates and investigation summaries to a Discord channel through the incoming webhook created during authorization.',
    authType: 'oauth2',
    scopes: ['webhook.incoming'],
    requiredFields: [],
  },
  {
    provider: 'mattermost',
    displayName: 'Mattermost',
    category: 'communication',
    description: 'Posts incident updates to Mattermost channels on your server using a bot account access token.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['serverUrl', 'botAccessToken'],
  },
  {
    provider: 'microsoft_teams',
    displayName: 'Microsoft Teams',
    category: 'communication',
    description: 'Lists teams and channels through Microsoft Graph and posts incident updates as channel messages.',
    authType: 'oauth2',
    scopes: [
      'https://graph.microsoft.com/Team.ReadBasic.All',
      'https://graph.microsoft.com/Channel.ReadBasic.All',
      'https://graph.microsoft.com/ChannelMessage.Send',
      'offline_access',
    ],
    requiredFields: [],
  },
  {
    provider: 'slack',
    displayName: 'Slack',
    category: 'communication',
    description:
      'Creates incident channels, posts updates and reads channel history in Slack so conversations become part of the investigation.',
    authType: 'oauth2',
    scopes: ['channels:read', 'channels:history', 'channels:manage', 'chat:write', 'users:read'],
    requiredFields: [],
  },

  // --- cloud ---
  {
    provider: 'aws',
    displayName: 'Amazon Web Services',
    category: 'cloud',
    description:
      'Assumes a read-only IAM role in your AWS account to query CloudWatch metrics and logs, CloudTrail events and resource state.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['roleArn', 'externalId', 'region'],
  },
  {
    provider: 'azure',
    displayName: 'Microsoft Azure',
    category: 'cloud',
    description:
      'Reads Azure Resource Manager resources, activity logs and Azure Monitor metrics for your subscriptions on your behalf.',
    authType: 'oauth2',
    scopes: ['https://management.azure.com/user_impersonation', 'offline_access'],
    requiredFields: [],
  },
  {
    provider: 'cloudflare',
    displayName: 'Cloudflare',
    category: 'cloud',
    description:
      'Reads Cloudflare zone analytics, firewall events and configuration changes with a scoped API token to spot edge-side causes.',
    authType: 'api_key',
    scopes: [],
    requiredFields: ['apiToken', 'accountId'],
  },
  {
    provider: 'gcp',
    displayName: 'Google Cloud',
    category: 'cloud',
    description:
      'Reads Cloud Logging entries, Cloud Monitoring time series and resource metadata from your Google Cloud projects.',
    authType: 'oauth2',
    scopes: [
      'https://www.googleapis.com/auth/cloud-platform.read-only',
      'https://www.googleapis.com/auth/logging.read',
      'https://www.googleapis.com/auth/monitoring.read',
    ],
    requiredFields: [],
  },
];

function compareDefinitions(a: IntegrationDefinition, b: IntegrationDefinition): number {
  const byCategory = integrationCategories.indexOf(a.category) - integrationCategories.indexOf(b.category);
  if (byCategory !== 0) return byCategory;
  return a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0;
}

/**
 * Every supported integration, sorted by category (in `integrationCategories` order) and then
 * by provider key.
 */
export const integrationCatalog: readonly IntegrationDefinition[] = Object.freeze(
  [...definitions].sort(compareDefinitions),
);

/**
 * The catalog (optionally one category of it) with each entry's connect URL. Returns fresh
 * objects, so callers may not mutate the catalog through the result.
 */
export function catalogEntries(
  baseUrl: string,
  category?: IntegrationCategory,
): Array<IntegrationDefinition & { connectUrl: string }> {
  const base = baseUrl.replace(/\/+$/, '');
  return integrationCatalog
    .filter((d) => category === undefined || d.category === category)
    .map((d) => ({
      ...d,
      scopes: [...d.scopes],
      requiredFields: [...d.requiredFields],
      connectUrl: `${base}/v1/integrations/connect/${d.provider}`,
    }));
}
