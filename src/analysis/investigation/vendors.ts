/**
 * Third parties: a vendor named by the failing alerts (its SDK's exception, its host answering
 * 5xx or timing out, its status page), or a dependency node that is a vendor; its outage, and
 * its rate limit (429), which has a fix of its own.
 */
import { alertLine, hostsIn, list, lower, RE, says, textOf } from './text.js';
import { type AlertObservation, type Hypothesis } from './types.js';
import { draft, matching, servicesOf, type View } from './view.js';

interface Vendor {
  name: string;
  pattern: RegExp;
  host: string;
}

/** Well-known providers, by product name, SDK namespace or host (the generic rule covers the rest). */
export const VENDORS: Vendor[] = [
  { name: 'Stripe', pattern: /\bstripe\b|api\.stripe\.com/i, host: 'api.stripe.com' },
  { name: 'PayPal', pattern: /\bpaypal\b/i, host: 'api.paypal.com' },
  { name: 'Adyen', pattern: /\badyen\b/i, host: 'adyen.com' },
  { name: 'Braintree', pattern: /\bbraintree\b/i, host: 'api.braintreegateway.com' },
  { name: 'Checkout.com', pattern: /checkout\.com\b/i, host: 'api.checkout.com' },
  { name: 'Square', pattern: /squareup\.com|\bsquare (api|sdk)\b/i, host: 'connect.squareup.com' },
  { name: 'Klarna', pattern: /\bklarna\b/i, host: 'api.klarna.com' },
  { name: 'Plaid', pattern: /\bplaid\b/i, host: 'production.plaid.com' },
  { name: 'Twilio', pattern: /\btwilio\b/i, host: 'api.twilio.com' },
  { name: 'Vonage', pattern: /\b(vonage|nexmo)\b/i, host: 'api.nexmo.com' },
  { name: 'SendGrid', pattern: /\bsendgrid\b/i, host: 'api.sendgrid.com' },
  { name: 'Mailgun', pattern: /\bmailgun\b/i, host: 'api.mailgun.net' },
  { name: 'Postmark', pattern: /\bpostmark(app)?\b/i, host: 'api.postmarkapp.com' },
  { name: 'Mailchimp', pattern: /\b(mailchimp|mandrill)\b/i, host: 'mandrillapp.com' },
  { name: 'Auth0', pattern: /\bauth0\b/i, host: 'auth0.com' },
  { name: 'Okta', pattern: /\bokta\b/i, host: 'okta.com' },
  { name: 'Algolia', pattern: /\balgolia\b/i, host: 'algolia.net' },
  { name: 'Cloudflare', pattern: /\bcloudflare\b/i, host: 'cloudflare.com' },
  { name: 'Fastly', pattern: /\bfastly\b/i, host: 'fastly.com' },
  { name: 'Akamai', pattern: /\bakamai\b/i, host: 'akamai.net' },
  { name: 'OpenAI', pattern: /\bopenai\b|api\.openai\.com/i, host: 'api.openai.com' },
  { name: 'Anthropic', pattern: /\banthropic\b/i, host: 'api.anthropic.com' },
  { name: 'Shopify', pattern: /\bshopify\b/i, host: 'shopify.com' },
  { name: 'Salesforce', pattern: /\bsalesforce\b/i, host: 'salesforce.com' },
  { name: 'Segment', pattern: /api\.segment\.io|\bsegment (api|sdk)\b/i, host: 'api.segment.io' },
  { name: 'Slack', pattern: /slack\.com\/api|hooks\.slack\.com|\bslack api\b/i, host: 'slack.com' },
  { name: 'PagerDuty', pattern: /\bpagerduty\b/i, host: 'events.pagerduty.com' },
  { name: 'GitHub', pattern: /api\.github\.com|\bgithub api\b/i, host: 'api.github.com' },
  { name: 'Firebase Cloud Messaging', pattern: /\b(fcm|firebase)\b|fcm\.googleapis\.com/i, host: 'fcm.googleapis.com' },
  { name: 'Apple Push Notification service', pattern: /\bapns\b|api\.push\.apple\.com/i, host: 'api.push.apple.com' },
  { name: 'Google Maps', pattern: /maps\.googleapis\.com|\bgoogle maps\b/i, host: 'maps.googleapis.com' },
  { name: 'Mapbox', pattern: /\bmapbox\b/i, host: 'api.mapbox.com' },
  { name: 'Contentful', pattern: /\bcontentful\b/i, host: 'cdn.contentful.com' },
  { name: 'Zendesk', pattern: /\bzendesk\b/i, host: 'zendesk.com' },
  { name: 'Avalara', pattern: /\bavalara\b|avatax/i, host: 'rest.avatax.com' },
  { name: 'EasyPost', pattern: /\beasypost\b/i, host: 'api.easypost.com' },
  { name: 'Snowflake', pattern: /\bsnowflake\b/i, host: 'snowflakecomputing.com' },
  { name: 'MongoDB Atlas', pattern: /mongodb\.net|\bmongodb atlas\b/i, host: 'mongodb.net' },
  { name: 'Confluent Cloud', pattern: /confluent\.cloud/i, host: 'confluent.cloud' },
  {
    name: 'AWS S3',
    pattern: /s3[.-][\w-]*\.?amazonaws\.com|\b(amazon|aws) s3\b|\bS3Exception\b|\bSlowDown\b/i,
    host: 's3.amazonaws.com',
  },
  { name: 'AWS DynamoDB', pattern: /dynamodb/i, host: 'dynamodb.amazonaws.com' },
  { name: 'AWS SQS', pattern: /\bsqs\.[\w-]+\.amazonaws\.com|\bAmazonSQS\b|\baws sqs\b/i, host: 'sqs.amazonaws.com' },
  {
    name: 'AWS SES',
    pattern: /email\.[\w-]+\.amazonaws\.com|\b(amazon|aws) ses\b|\bAmazonSimpleEmail/i,
    host: 'email.amazonaws.com',
  },
  { name: 'AWS Kinesis', pattern: /kinesis/i, host: 'kinesis.amazonaws.com' },
  {
    name: 'AWS',
    pattern:
      /(?<!\.(rds|cache|docdb|es|redshift))\.amazonaws\.com|\bbotocore\b|\bboto3\b|\bcom\.amazonaws\b|\bsoftware\.amazon\.awssdk\b|\bAws::/i,
    host: 'amazonaws.com',
  },
  { name: 'Google Cloud', pattern: /googleapis\.com|google\.api_core|\bcom\.google\.cloud\b/i, host: 'googleapis.com' },
  { name: 'Azure', pattern: /\.windows\.net|\bazure\b/i, host: 'azure.com' },
];

/** Words that say the text is about a vendor's own trouble (a status page, an SDK error). */
const STATUS_PAGE =
  /(status ?page|statuspage|status\.[a-z0-9-]+\.(com|io|net)|(investigating|identified|monitoring) .{0,60}(degraded|outage|elevated error|incident)|(degraded performance|partial outage|major outage|service disruption))/i;
const RATE_LIMITED =
  /(\b429\b|too many requests|rate[- ]?limit(ed|ing| exceeded)|throttl(ed|ing)exception|throttlingexception|requestlimitexceeded|quota (exceeded|exhausted)|slowdown: please reduce|reduce your request rate|retry-after)/i;
const VENDOR_FAILURE =
  /(\b5\d\d\b|5xx|timed? ?out|timeout|connection (refused|reset)|unavailable|service ?unavailable|bad gateway|gateway time-?out|econnreset|etimedout|apiconnectionerror|connectionerror|connecterror|internal server error|failed|errors?\b|exception)/i;
/** Hosts of our own world or of monitoring tools, never a vendor to blame. */
const NOT_VENDOR_HOST =
  /(\.svc(\.|$)|cluster\.local|\.internal$|\.local$|\.lan$|\.corp$|localhost|example\.(com|org|net)|sentry\.io|datadoghq|grafana|prometheus|alertmanager|pagerduty\.com\/incidents|github\.com$|githubusercontent|runbooks?\.|wiki\.|docs\.|dashboards?\.|kibana|opsgenie)/i;

/** Probes and synthetic checks of our own endpoints. */
const SYNTHETIC = /(blackbox|probe|synthetic|uptime|endpoint ?down|http_2xx|tcp_connect|healthcheck)/i;

/** The registrable name of a host as a vendor name (`api.acmepay.com` → `acmepay.com`). */
const registrable = (host: string) => host.split('.').slice(-2).join('.');

interface VendorSignal {
  vendor: Vendor;
  alerts: AlertObservation[];
}

/** Failing alerts that name a vendor: known ones by product or SDK, others by their public host. */
function vendorSignals(v: View): VendorSignal[] {
  // A topology node named like a vendor is the vendor (`stripe`), so only generic hosts are checked against it.
  const internal = new Set(
    [lower(v.input.incident.service), ...v.dependencyNames].filter((n) => !VENDORS.some((x) => x.pattern.test(n))),
  );
  const failing = v.all.filter((a) => VENDOR_FAILURE.test(textOf(a)) || RATE_LIMITED.test(textOf(a)));
  const out: VendorSignal[] = [];
  const claimed = new Set<AlertObservation>();
  for (const vendor of VENDORS) {
    const alerts = failing.filter((a) => !claimed.has(a) && vendor.pattern.test(textOf(a)));
    if (alerts.length === 0) continue;
    for (const a of alerts) claimed.add(a);
    out.push({ vendor, alerts });
  }
  // Any other public host in a failing line: the vendor is who answers there.
  const byHost = new Map<string, AlertObservation[]>();
  // The tenant's own services by every name a host might carry (`checkout` of checkout-api).
  const own = new Set(
    [
      v.input.incident.service,
      ...v.dependencyNames,
      ...v.input.topology.dependents.map((d) => d.name),
      ...v.all.map((a) => a.service),
    ]
      .filter((n): n is string => !!n)
      .flatMap((n) => [lower(n), lower(n).replace(/[-_](api|service|svc|app|web|server)$/, '')]),
  );
  for (const a of failing) {
    // A probe of our own endpoint names our own host, not a vendor's.
    if (claimed.has(a) || SYNTHETIC.test(`${a.alertName} ${a.labels.job ?? ''} ${a.labels.module ?? ''}`)) continue;
    const lines = textOf(a)
      .split('\n')
      .filter((l) => VENDOR_FAILURE.test(l) || RATE_LIMITED.test(l))
      .filter((l) => !/^(labels|source|link|runbook|dashboard|generatorurl|panel|silence)/i.test(l.trim()));
    for (const host of hostsIn(lines.join('\n'))) {
      if (NOT_VENDOR_HOST.test(host) || internal.has(lower(host)) || host.split('.').some((part) => own.has(part)))
        continue;
      if (!/\.(com|net|io|org|co|ai|dev|app|cloud)$/.test(host)) continue;
      const key = registrable(host);
      byHost.set(key, [...(byHost.get(key) ?? []), a]);
    }
  }
  for (const [domain, alerts] of byHost)
    out.push({
      vendor: { name: domain, pattern: new RegExp(domain.replace(/\./g, '\\.'), 'i'), host: domain },
      alerts,
    });
  // A dependency node that is a vendor and the service's errors name, even when it does not alert.
  for (const d of v.input.topology.dependencies) {
    const known = VENDORS.find((x) => x.pattern.test(d.name));
    if (!known || out.some((s) => s.vendor.name === known.name || s.vendor.pattern.test(d.name))) continue;
    const alerts = v.own.filter(
      (a) => VENDOR_FAILURE.test(textOf(a)) && lower(textOf(a)).includes(lower(d.name).split(/[-_ ]/)[0]!),
    );
    if (alerts.length > 0) out.push({ vendor: { ...known, name: d.name }, alerts });
  }
  return out;
}

const isOwn = (v: View, a: AlertObservation) =>
  v.own.includes(a) || (a.service !== null && lower(a.service) === lower(v.input.incident.service));

export function thirdPartyOutage(v: View): Hypothesis[] {
  const out: Hypothesis[] = [];
  for (const { vendor, alerts } of vendorSignals(v)) {
    const limited = alerts.filter((a) => RATE_LIMITED.test(textOf(a)));
    const failing = alerts.filter((a) => !limited.includes(a));
    if (limited.length > failing.length) {
      out.push(rateLimited(v, vendor, limited));
      continue;
    }
    const services = servicesOf(failing);
    const statusPage = failing.some((a) => STATUS_PAGE.test(textOf(a)));
    const own = failing.filter((a) => isOwn(v, a));
    let score = 0.7 + 0.05 * Math.min(2, failing.length - 1) + (services.length > 1 ? 0.05 : 0);
    if (statusPage) score += 0.1;
    if (own.length === 0) score -= 0.2;
    const host = hostsIn(failing.map(textOf).join('\n')).find((h) => vendor.pattern.test(h)) ?? vendor.host;
    const support = failing.slice(0, 3).map(alertLine);
    if (statusPage) support.push(`${vendor.name}'s status page reports trouble`);
    out.push(
      draft('third_party_outage', {
        statement: `Third-party outage: ${vendor.name} (${host}) is failing`,
        subject: vendor.name,
        score,
        support,
        against: own.length === 0 ? [`${v.service}'s own alerts do not name ${vendor.name}`] : [],
        sources: failing.map((a) => a.eventId),
        rootCause: `A third-party outage: ${vendor.name} (${host}) fails or times out for ${list(services.length > 0 ? services : [v.service])} (${says(failing[0]!)}); the errors come from ${vendor.name}, not from a change on our side.`,
        actions: [
          `Fail over ${v.service}'s calls to ${vendor.name} (${host}): switch to the fallback provider or queue the requests for retry, and follow ${vendor.name}'s status page until it recovers`,
          `Shorten ${v.service}'s timeout and open a circuit breaker on ${host} so threads are not held while ${vendor.name} is down`,
        ],
        keywords: ['third-party', 'vendor', 'provider', 'external', 'failover', lower(vendor.name)],
        evidence: 'direct',
      }),
    );
  }
  if (out.length === 0) out.push(...genericThirdParty(v));
  return out;
}

function rateLimited(v: View, vendor: Vendor, limited: AlertObservation[]): Hypothesis {
  const services = servicesOf(limited);
  const callers = services.length > 0 ? services : [v.service];
  const own = limited.some((a) => isOwn(v, a));
  return draft('rate_limited', {
    statement: `${vendor.name} rate-limits ${list(callers)} (429 Too Many Requests)`,
    subject: vendor.name,
    score: 0.7 + 0.05 * Math.min(2, limited.length - 1) - (own ? 0 : 0.2),
    support: limited.slice(0, 3).map(alertLine),
    against: [],
    sources: limited.map((a) => a.eventId),
    rootCause: `A rate limit, not an outage: ${vendor.name} throttles ${list(callers)} (${says(limited[0]!)}); ${list(callers)} send more requests than ${vendor.name}'s quota allows, and the refused calls fail.`,
    actions: [
      `Reduce ${list(callers)}'s request rate to ${vendor.name}: honour Retry-After with exponential backoff, batch or cache the calls, and pause bulk jobs calling ${vendor.name}`,
      `Ask ${vendor.name} for a higher quota (or spread the calls over more API keys the contract allows) and alert on the remaining quota`,
    ],
    keywords: ['rate limit', 'quota', '429', 'throttle', 'backoff', lower(vendor.name)],
    evidence: 'direct',
  });
}

function genericThirdParty(v: View): Hypothesis[] {
  const generic = matching(v.own, RE.thirdPartyWords).filter(
    (a) => RE.error.test(textOf(a)) || RE.upstreamDown.test(textOf(a)),
  );
  if (generic.length === 0) return [];
  const host = hostsIn(generic.map(textOf).join('\n')).find((h) => !NOT_VENDOR_HOST.test(h)) ?? 'the external provider';
  return [
    draft('third_party_outage', {
      statement: `Third-party outage: ${host} is failing`,
      subject: host,
      score: 0.55,
      support: generic.slice(0, 3).map(alertLine),
      against: [],
      sources: generic.map((a) => a.eventId),
      rootCause: `A third-party outage: ${host} fails for ${v.service} (${says(generic[0]!)}).`,
      actions: [
        `Fail over ${v.service}'s calls to ${host}: switch to a fallback or queue the requests, and follow the provider's status page`,
        `Open a circuit breaker on ${host} in ${v.service} so it degrades instead of failing`,
      ],
      keywords: ['third-party', 'vendor', 'provider', 'external'],
      evidence: 'direct',
    }),
  ];
}
