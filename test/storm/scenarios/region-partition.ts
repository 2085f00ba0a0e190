import { alertmanager, datadog, generic, grafana, ruleAlert, sentry, watchdog, type RuleAlert } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const NET = 'eu-west-1-partition';
/** The platform route groups infrastructure alerts by rule and region, with a 1 minute group interval. */
const platform = { groupBy: ['alertname', 'region'], route: '{}/{team="platform"}' };
const byService = { groupBy: ['alertname', 'service'] };

const targetDown = (service: string, startsAt: number, region = 'eu-west-1', truth = NET): RuleAlert =>
  ruleAlert('TargetDown', service, 'warning', `100% of the ${service} targets in ${region} are down`, startsAt, truth, {
    labels: { region, team: 'platform', job: service, namespace: 'platform' },
  });

/**
 * A transit gateway fault cuts eu-west-1 off from the other regions' networks and splits its
 * availability zones: Kafka loses its brokers, scrape targets vanish, payments and the ledger time
 * out, the EU storefront fails. Services without a dependency between them alert together only
 * because they share the region. A TargetDown in us-east-1 and a catalog import lag are unrelated.
 */
export const regionPartition: ScenarioDefinition = {
  name: 'region-partition',
  durationSeconds: 140,
  build: (t) => ({
    name: 'region-partition',
    title: 'network partition in eu-west-1',
    description:
      'A network partition isolates eu-west-1: Kafka, payments, the ledger, notifications and the EU storefront fail at once.',
    services: shopServices,
    edges: shopEdges,
    outages: { [NET]: { root: 'kafka', summary: 'eu-west-1 partitioned; Kafka brokers unreachable' } },
    deliveries: [
      alertmanager(t, 0, [targetDown('kafka', -30), targetDown('notifications-worker', -25)], platform),
      datadog(t, 10, {
        monitorId: 70000311,
        name: 'Packet loss between availability zones above 5%',
        service: 'network',
        scope: 'region:eu-west-1',
        tags: ['team:platform', 'region:eu-west-1'],
        priority: 'P1',
        metric: 'network.packet_loss',
        status: 'network.packet_loss over region:eu-west-1 was > 5 on average during the last 5m.',
        message: 'Packets between eu-west-1a and eu-west-1b are being dropped.',
        truth: NET,
      }),
      alertmanager(
        t,
        20,
        [
          ruleAlert(
            'KafkaUnderReplicatedPartitions',
            'kafka',
            'critical',
            'Kafka has 212 under-replicated partitions',
            -5,
            NET,
            {
              labels: { region: 'eu-west-1', team: 'platform', instance: 'kafka-1:9308' },
            },
          ),
        ],
        platform,
      ),
      grafana(
        t,
        35,
        [
          ruleAlert(
            'Payment authorization latency',
            'payments-api',
            'critical',
            'Payment authorizations take more than 3 s',
            10,
            NET,
            {
              labels: { region: 'eu-west-1' },
            },
          ),
        ],
        { folder: 'Payments', value: 3.8 },
      ),
      sentry(t, 45, {
        project: 'ledger-api',
        title: 'ConnectTimeout: ledger-db.eu-west-1.internal:5432 timed out',
        culprit: 'ledger.postings in write_posting',
        release: 'ledger-api@7.4.0',
        tags: [['region', 'eu-west-1']],
        truth: NET,
      }),
      alertmanager(
        t,
        65,
        [targetDown('kafka', -30), targetDown('notifications-worker', -25), targetDown('email-worker', 40)],
        platform,
      ),
      alertmanager(t, 80, [targetDown('search-api', 50, 'us-east-1', NOISE)], platform),
      generic(t, 90, [
        {
          name: 'EUCheckoutJourneyFailing',
          service: 'web-frontend',
          severity: 'critical',
          summary: 'The checkout journey failed from Dublin and Frankfurt',
          labels: { check: 'checkout-journey-eu', region: 'eu-west-1' },
          startsAt: 85,
          truth: NET,
        },
      ]),
      alertmanager(
        t,
        100,
        [
          ruleAlert(
            'CatalogImportLagging',
            'catalog-api',
            'warning',
            'The supplier catalog import is 2 hours behind',
            20,
            NOISE,
            {
              labels: { namespace: 'catalog', region: 'us-east-1' },
            },
          ),
        ],
        byService,
      ),
      datadog(t, 120, {
        monitorId: 70000488,
        name: 'Push notification queue backlog',
        service: 'notifications-worker',
        scope: 'region:eu-west-1,service:notifications-worker',
        tags: ['team:platform', 'region:eu-west-1'],
        priority: 'P3',
        metric: 'aws.sqs.approximate_number_of_messages_visible',
        status: 'queue depth over region:eu-west-1,service:notifications-worker was > 10000 during the last 5m.',
        message: 'Push notifications are piling up.',
        truth: NET,
      }),
      watchdog(t, 140),
    ],
  }),
};
