/**
 * Messaging mechanisms: consumer lag (and whether a producer burst or slow consumers cause it),
 * and a broker's memory or disk alarm raised by a queue nobody consumes. Each names the
 * consumer group, topic or queue to act on, and a fix that is not "restart the broker".
 */
import { alertLine, lower, says, textOf } from './text.js';
import { type AlertObservation, type Hypothesis } from './types.js';
import { draft, firstCapture, firstLabel, matching, servicesOf, type View } from './view.js';

const LAG =
  /(consumer ?(group )?lag|consumergroup_lag|records[-_ ]lag|\blag\b.{0,40}(messages|records|offsets?|behind|growing|increas)|messages behind|offsets? behind|kafka_consumer.*lag|queue (depth|backlog|length|size)|backlog (of|grows|growing|is)|messages? (ready|waiting|unacked|in queue)|approximate(numberofmessagesvisible|ageofoldestmessage)|age of (the )?oldest message|oldest message|not (being )?consumed|consumers? (fall(ing)? behind|can'?t keep up|cannot keep up))/i;
const BURST =
  /(produce(d|r)? (rate|burst|spike)|publish(ed|ing)? rate|messages? (in|produced|published) per|incoming (messages|rate)|bytes ?in|messagesinpersec|(\d+(\.\d+)?x|\d{3,} ?%) (the |its )?(normal|baseline|usual)|burst|spike|backfill|bulk (import|load|publish)|replay(ed|ing)?|re-?publish|campaign|flash sale)/i;
const CONSUMER_TROUBLE =
  /(crashloop|oomkill|restart(ed|ing)|rebalanc|poison|deseriali[sz]|consumer (error|exception|stuck|hung|down)|processing (error|failed)|commit failed|no consumers|consumers?\s*[=:]\s*0|0 consumers|redeliver|nack|requeue)/i;
/** One message that every consumer fails on (`redelivered message 7f3e… 14 times`). */
const REBALANCE =
  /(rebalanc\w*|joined the group \d+ times|members? (joined|left)|leaves? the group|kicked out of the group|max\.poll\.interval|poll interval|commitfailedexception|group coordinator)/i;
const POISON = /(?:poison(?:ed)? message|message(?: id)?|redelivered message)[\s:=]+["'`]?([a-z0-9][\w:.-]{5,})/i;
const ALARM =
  /(memory alarm|disk alarm|resource alarm|rabbitmq_alarms|alarms? (set|raised|in effect|triggered)|(publishers?|connections?) (are |were )?(blocked|blocking)|connection\.blocked|vm_memory_high_watermark|memory high watermark|disk_free_limit|free disk space (alarm|below|limit)|log ?dirs?.{0,30}(full|offline|no space)|offline log director|kafka.{0,40}(disk|log ?dir).{0,30}(full|9\d ?%|no space)|broker.{0,30}(disk|memory).{0,30}(full|alarm|9\d ?%))/i;
const NO_CONSUMER =
  /(no consumers|consumers?\s*[=:]\s*0|0 consumers|rabbitmq_queue_consumers\s*(==|=)\s*0|consumer (count|utili[sz]ation) (is )?0|unconsumed|nobody consumes|not (being )?consumed|without (a )?consumer)/i;

const GROUP_LABELS = ['consumergroup', 'consumer_group', 'group', 'groupid', 'group_id', 'consumer'];
const TOPIC_LABELS = ['topic', 'queue', 'queue_name', 'queuename', 'stream', 'subscription', 'channel'];

/** A consumer group or queue named in text (`group orders-consumer`, `queue "emails"`). */
const GROUP_IN_TEXT = /(?:consumer[- ]group|group(?:id)?)[\s:=]+["'`]?([a-z0-9][\w.-]{2,})/i;
const QUEUE_IN_TEXT = /(?:queue|topic|stream)[\s:=]+["'`]?([a-z0-9][\w.-]{2,})/i;

/** The service that produces to a topic: an alert of another service that reports a burst. */
function producerBurst(v: View, lagging: AlertObservation[]): AlertObservation | undefined {
  return (
    v.all.find((a) => !lagging.includes(a) && BURST.test(textOf(a)) && !LAG.test(textOf(a))) ??
    lagging.find((a) => BURST.test(textOf(a)))
  );
}

export function consumerLag(v: View): Hypothesis[] {
  const lagging = matching(v.all, LAG).filter((a) => !ALARM.test(textOf(a)));
  if (lagging.length === 0) return [];
  const group = firstLabel(lagging, GROUP_LABELS) ?? firstCapture(lagging, GROUP_IN_TEXT);
  const topic = firstLabel(lagging, TOPIC_LABELS) ?? firstCapture(lagging, QUEUE_IN_TEXT);
  const consumers = servicesOf(lagging);
  const consumer = consumers.find((s) => lower(s) === lower(v.input.incident.service)) ?? consumers[0] ?? v.service;
  const burst = producerBurst(v, lagging);
  const stuck = v.all.filter(
    (a) => (lower(a.service) === lower(consumer) || lagging.includes(a)) && CONSUMER_TROUBLE.test(textOf(a)),
  );
  const poison = firstCapture([...lagging, ...stuck], POISON);
  const what = group ? `consumer group ${group}` : `${consumer}'s consumers`;
  const on = topic ? ` on ${topic}` : '';
  const support = lagging.slice(0, 2).map(alertLine);
  let score = 0.55 + (group || topic ? 0.1 : 0) + (lagging.some((a) => v.own.includes(a)) ? 0.05 : 0);
  if (burst && stuck.length === 0) {
    const producer = burst.service && lower(burst.service) !== lower(consumer) ? burst.service : null;
    score += 0.15;
    support.push(`the producer side surged: ${alertLine(burst)}`);
    const from = producer ?? 'the producer';
    return [
      draft('consumer_lag', {
        statement: `Consumer lag on ${what}${on}: a producer burst from ${from} outpaces the consumers`,
        subject: group ?? topic ?? consumer,
        score,
        support,
        against: [],
        sources: [...lagging, burst].map((a) => a.eventId),
        rootCause: `Consumer lag from a producer burst: ${from} published far more than usual${on} (${says(burst, 100)}), and ${what} cannot drain it at its normal rate, so the backlog grows (${says(lagging[0]!, 100)}). The consumers are healthy; they are outnumbered.`,
        actions: [
          `Scale out ${what}${on} (more consumer replicas, up to the topic's partition count) so it drains the backlog`,
          `Throttle ${from}'s publishing${on} (rate-limit or pause the bulk job behind the burst) until the lag is back under its threshold`,
        ],
        keywords: ['consumer', 'lag', 'backlog', 'scale', 'kafka', 'queue', lower(group ?? topic ?? consumer)],
        evidence: 'direct',
      }),
    ];
  }
  if (poison) return [poisonMessage(v, { lagging, stuck, poison, consumer, what, on, score: score + 0.15 })];
  const rebalancing = [...lagging, ...stuck].filter((a) => REBALANCE.test(textOf(a)));
  if (rebalancing.length > 0 && !burst)
    return [
      draft('consumer_lag', {
        statement: `A rebalance storm: ${what}${on} keeps leaving and rejoining its group, so it never consumes`,
        subject: group ?? topic ?? consumer,
        score: score + 0.15,
        support: rebalancing.slice(0, 3).map(alertLine),
        against: [],
        sources: [...lagging, ...stuck].map((a) => a.eventId),
        rootCause: `A consumer rebalance storm: the members of ${what}${on} are kicked out of the group and rejoin again and again (${says(rebalancing[0]!, 110)}), because processing one poll's batch takes longer than max.poll.interval.ms; each rebalance stops the whole group, so the lag only grows.`,
        actions: [
          `Stop the rebalances of ${what}: raise max.poll.interval.ms or lower max.poll.records so a batch finishes within the poll interval (or make its slow processing step faster), then let it drain`,
          `Alert on the group's rebalance rate, not only its lag`,
        ],
        keywords: [
          'rebalance',
          'max.poll.interval.ms',
          'max.poll.records',
          'consumer',
          'kafka',
          lower(group ?? consumer),
        ],
        evidence: 'direct',
      }),
    ];
  if (stuck.length > 0) {
    score += 0.1;
    support.push(...stuck.slice(0, 2).map(alertLine));
  }
  return [
    draft('consumer_lag', {
      statement: `Consumer lag on ${what}${on}: the consumers are ${stuck.length > 0 ? 'failing' : 'too slow'}`,
      subject: group ?? topic ?? consumer,
      score,
      support,
      against: burst ? [] : ['no sign of a producer burst'],
      sources: [...lagging, ...stuck].map((a) => a.eventId),
      rootCause: `Consumer lag: ${what}${on} stopped keeping up (${says(lagging[0]!, 100)})${stuck.length > 0 ? `; the consumers of ${consumer} are failing (${says(stuck[0]!, 100)})` : ''}, so messages pile up and everything downstream of them is late.`,
      actions: [
        stuck.length > 0
          ? `Fix ${consumer}'s consumers of ${group ?? topic ?? 'the queue'}: find the message or error they fail on (${says(stuck[0]!, 60)}), skip or dead-letter it, and let ${what} drain`
          : `Scale out ${what}${on} and check what slows each message (a slow downstream call or query) so it drains`,
        `Watch the lag of ${what} fall; page the owner of ${consumer} if it does not within 15 minutes`,
      ],
      keywords: ['consumer', 'lag', 'backlog', 'queue', lower(group ?? topic ?? consumer)],
      // Slow consumers are a symptom: what slows them (a vendor, a database) is the cause when seen.
      evidence: 'topological',
    }),
  ];
}

function poisonMessage(
  v: View,
  c: {
    lagging: AlertObservation[];
    stuck: AlertObservation[];
    poison: string;
    consumer: string;
    what: string;
    on: string;
    score: number;
  },
): Hypothesis {
  const { poison, consumer, what, on } = c;
  const alerts = [...c.lagging, ...c.stuck];
  return draft('consumer_lag', {
    statement: `A poison message (${poison}) blocks ${what}${on}: every consumer fails on it and it is redelivered`,
    subject: poison,
    score: c.score,
    support: alerts.slice(0, 3).map(alertLine),
    against: [],
    sources: alerts.map((a) => a.eventId),
    rootCause: `A poison message: message ${poison}${on} makes ${consumer}'s consumers fail (${says((c.stuck[0] ?? c.lagging[0])!, 100)}); it is redelivered to the next consumer, which fails too, so ${what} stops and the queue backs up behind it.`,
    actions: [
      `Move message ${poison} to the dead-letter queue (or ack and park it) so ${consumer}'s consumers move on, then let them drain ${what}`,
      `Make ${consumer} dead-letter a message after a bounded number of redeliveries and validate input it cannot handle`,
    ],
    keywords: ['poison', 'message', 'dead-letter', 'dlq', 'consumer', 'redeliver', lower(poison)],
    evidence: 'direct',
  });
}

export function brokerAlarm(v: View): Hypothesis[] {
  const alarms = matching(v.all, ALARM);
  if (alarms.length === 0) return [];
  const broker =
    alarms.map((a) => a.service).find((s): s is string => !!s) ??
    v.input.topology.dependencies.find((d) => d.type === 'queue')?.name ??
    'the broker';
  const disk = alarms.some((a) => /disk|log ?dir/i.test(textOf(a)));
  const backlog = v.all.filter((a) => LAG.test(textOf(a)) || NO_CONSUMER.test(textOf(a)));
  const queue =
    firstLabel([...backlog, ...alarms], TOPIC_LABELS) ?? firstCapture([...backlog, ...alarms], QUEUE_IN_TEXT);
  const unconsumed = backlog.filter((a) => NO_CONSUMER.test(textOf(a)));
  const consumerDown = v.all.filter(
    (a) => !alarms.includes(a) && a.service && lower(a.service) !== lower(broker) && CONSUMER_TROUBLE.test(textOf(a)),
  );
  const consumer = consumerDown[0]?.service ?? null;
  let score = 0.6 + (queue ? 0.1 : 0) + (unconsumed.length > 0 || consumerDown.length > 0 ? 0.1 : 0);
  if (alarms.some((a) => v.own.includes(a))) score += 0.05;
  const support = [...alarms.slice(0, 2), ...backlog.slice(0, 1), ...consumerDown.slice(0, 1)].map(alertLine);
  const what = queue ? `queue ${queue}` : 'a queue';
  const why =
    consumer !== null
      ? `its consumer ${consumer} is down (${says(consumerDown[0]!, 80)})`
      : unconsumed.length > 0
        ? 'no consumer reads it'
        : 'its consumers do not keep up';
  return [
    draft('broker_alarm', {
      statement: `${broker} raised its ${disk ? 'disk' : 'memory'} alarm: ${what} grows because ${why}`,
      subject: queue ?? broker,
      score,
      support,
      against: [],
      sources: [...alarms, ...backlog, ...consumerDown].map((a) => a.eventId),
      rootCause: `A broker ${disk ? 'disk' : 'memory'} alarm from an unconsumed queue: ${what} on ${broker} keeps growing because ${why}, until ${broker} crossed its ${disk ? 'free-disk' : 'memory'} limit (${says(alarms[0]!, 100)}) and blocked every publisher, so producers that have nothing to do with ${what} fail too.`,
      actions: [
        consumer
          ? `Bring ${consumer} (the consumer of ${queue ?? 'the queue'}) back so it drains ${what}; if it cannot recover quickly, move ${what}'s messages to a parking queue (shovel) to clear the alarm — do not restart ${broker}, which loses nothing but time`
          : `Drain ${what} on ${broker}: start a consumer for it, or move its messages to a parking queue (shovel) or purge them if they are disposable — restarting ${broker} does not clear the backlog`,
        `Cap ${what} (max-length or TTL with a dead-letter exchange) so one unconsumed queue cannot block ${broker} again`,
      ],
      keywords: ['queue', 'broker', 'alarm', 'consumer', 'rabbitmq', 'purge', 'shovel', lower(queue ?? broker)],
      evidence: 'direct',
    }),
  ];
}
