/**
 * Hypotheses from changes: a bad deploy of the service, a dependency's deploy, a config change,
 * and a memory leak shipped by a change.
 */
import {
  alertLine,
  distinctiveWords,
  firstLine,
  formatDuration,
  hhmm,
  list,
  lower,
  minutesBetween,
  ms,
  proximity,
  quote,
  RE,
  says,
  sha7,
  textOf,
  isProduction,
} from './text.js';
import { type ChangeObservation, type CommitObservation, type Hypothesis } from './types.js';
import { draft, matching, type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Deployments and code changes

interface Deploy {
  change: ChangeObservation;
  minutesBefore: number;
  previousSha: string | null;
}

/** The latest state of each deployment (GitHub sends one event per status), with the release before it. */
function latestDeploys(deployments: ChangeObservation[]): ChangeObservation[] {
  const byId = new Map<string, ChangeObservation>();
  for (const d of deployments) {
    const key = d.deploymentId ?? `${d.service}:${d.sha}:${d.environment}`;
    const seen = byId.get(key);
    if (!seen || ms(d.occurredAt) > ms(seen.occurredAt)) byId.set(key, d);
  }
  return [...byId.values()];
}

const failedState = (state: string | null) => state !== null && /^(failure|error|inactive)$/i.test(state);
const notYetLive = (state: string | null) => state !== null && /^(queued|pending)$/i.test(state);

/** Releases no deployment event followed: teams that deploy on release publish nothing else. */
function releasesAsDeploys(v: View): ChangeObservation[] {
  return v.input.changes.filter(
    (r) =>
      r.changeType === 'release' &&
      !v.deployments.some(
        (d) =>
          d.changeType !== 'feature_flag' &&
          lower(d.service) === lower(r.service) &&
          ms(d.occurredAt) >= ms(r.occurredAt),
      ),
  );
}

function deploysOf(v: View, hops: (h: number) => boolean): Deploy[] {
  const latest = [
    ...latestDeploys(v.deployments.filter((d) => d.changeType !== 'feature_flag')),
    ...releasesAsDeploys(v),
  ].filter((d) => hops(d.hops) && !notYetLive(d.state));
  return latest
    .map((change) => {
      const earlier = latest
        .filter(
          (o) =>
            o.service === change.service &&
            o.environment === change.environment &&
            ms(o.occurredAt) < ms(change.occurredAt) &&
            !failedState(o.state),
        )
        .sort((a, b) => ms(b.occurredAt) - ms(a.occurredAt))[0];
      return { change, minutesBefore: minutesBetween(change.occurredAt, v.first), previousSha: earlier?.sha ?? null };
    })
    .filter((d) => proximity(d.minutesBefore) > 0);
}

const deployName = (c: ChangeObservation) =>
  c.changeType === 'release'
    ? `release ${c.version ?? sha7(c.sha) ?? c.eventId} of ${c.service ?? c.repository ?? 'the service'}`
    : `deployment ${c.deploymentId ?? sha7(c.sha) ?? c.eventId} of ${c.service ?? c.repository ?? 'the service'}`;
/** Words every deploy and every alert use: naming them says nothing about what changed. */
const OPS_WORDS =
  /^(production|staging|deploy\w*|releas\w*|success\w*|error\w*|fail\w*|servic\w*|request\w*|respon\w*|timeout\w*|latency|alert\w*|status|state|environment|github\w*|actions|workflow\w*|version|build|pipeline|commit\w*|merged?|branch|main|master|server|client|https?|example|total|value|threshold|above|below|minutes?|seconds?|percent)$/;

/** What a change says it changed: its title, description and commit messages. */
const changeWords = (c: ChangeObservation) =>
  distinctiveWords([c.title, c.description ?? '', ...c.commits.map((m) => m.message), c.version ?? ''].join('\n'));
const shaPart = (c: ChangeObservation) => (c.sha ? ` (sha ${sha7(c.sha)})` : '');

/** Pushes whose commits include the deployed sha (or any push of the service shortly before it). */
function commitsBehind(v: View, deploy: ChangeObservation): CommitObservation[] {
  const exact = v.pushes.filter(
    (p) => p.commits.some((c) => deploy.sha && c.id === deploy.sha) || (deploy.sha && p.sha === deploy.sha),
  );
  const pushes =
    exact.length > 0
      ? exact
      : v.pushes.filter(
          (p) =>
            p.service === deploy.service &&
            ms(p.occurredAt) <= ms(deploy.occurredAt) &&
            minutesBetween(p.occurredAt, deploy.occurredAt) <= 180,
        );
  return pushes.flatMap((p) => p.commits).filter((c) => !/^merge (pull request|branch)/i.test(c.message));
}

export function badDeploy(v: View): Hypothesis[] {
  const errors = matching(v.own, RE.error).length > 0;
  return deploysOf(v, (h) => h === 0).map(({ change, minutesBefore, previousSha }) => {
    const support: string[] = [
      `${deployName(change)}${shaPart(change)} to ${change.environment ?? 'an environment'} (${change.state ?? 'deployed'}) ${formatDuration(minutesBefore)} before the first alert`,
    ];
    const against: string[] = [];
    let score = 0.35 + 0.4 * proximity(minutesBefore);
    // "Errors started after it" says little of a deploy hours earlier.
    if (errors && proximity(minutesBefore) >= 0.8) {
      score += 0.1;
      support.push('errors started after it');
    }
    const release = v.own.find((a) => {
      const r = lower(a.labels.release ?? a.labels.version ?? '');
      return (
        r !== '' &&
        ((change.sha !== null &&
          (r.includes(lower(change.sha).slice(0, 7)) || lower(change.sha).startsWith(r.split('@').pop() ?? '@@'))) ||
          (change.ref !== null && r.endsWith(lower(change.ref))))
      );
    });
    if (release) {
      score += 0.1;
      support.push(`the failing events carry its release (${release.labels.release ?? release.labels.version})`);
    }
    // Specific beats temporal: the errors name something the change changed (a library, a field).
    const alertWords = distinctiveWords(v.own.map(textOf).join('\n'));
    const named = [...changeWords(change)].filter(
      (w) =>
        alertWords.has(w) &&
        !/^[0-9a-f]+$/.test(w) &&
        !OPS_WORDS.test(w) &&
        !lower(change.service).includes(w) &&
        !lower(change.repository).includes(w),
    );
    if (named.length > 0) {
      score += 0.15;
      support.push(`the errors name what it changed (${named.slice(0, 3).join(', ')})`);
    }
    if (failedState(change.state)) {
      score -= 0.2;
      against.push(`the deployment ended in state ${change.state}, so it may not be live`);
    }
    if (!isProduction(change.environment)) {
      score -= 0.25;
      against.push(`it went to ${change.environment}, not production`);
    }
    const siblings = v.input.topology.dependencies
      .filter((d) => d.alertingDependents.length >= 2)
      .flatMap((d) => d.alertingDependents);
    const undeployed = [...new Set(siblings)].filter(
      (s) => lower(s) !== lower(change.service) && !v.deployments.some((d) => lower(d.service) === lower(s)),
    );
    if (undeployed.length > 0) {
      score -= 0.2;
      against.push(`${list(undeployed)} fail the same way and were not deployed`);
    }
    if (v.flapping) {
      score -= 0.15;
      against.push(
        `the alert recovers on its own and fires again (${v.flapping.toggles} toggles), which a broken release does not do`,
      );
    }
    const commits = commitsBehind(v, change);
    const commitPart =
      commits.length > 0
        ? ` It shipped ${commits
            .slice(0, 3)
            .map((c) => `${sha7(c.id)} "${quote(firstLine(c.message), 80)}"`)
            .join(', ')}.`
        : '';
    const symptom = v.ownFiring[0] ? ` ${v.ownFiring[0].alertName} fired at ${hhmm(v.ownFiring[0].occurredAt)}.` : '';
    const name = deployName(change);
    const target = previousSha
      ? ` back to the previous release (sha ${sha7(previousSha)})`
      : ' to the previous release';
    return draft('bad_deploy', {
      statement: `${name[0]!.toUpperCase()}${name.slice(1)}${shaPart(change)} broke ${change.service ?? v.service}`,
      subject: change.service ?? v.service,
      score,
      support,
      against,
      sources: [change.eventId, ...(release ? [release.eventId] : [])],
      rootCause: `A bad release: ${name}${shaPart(change)} to ${change.environment ?? 'production'} at ${hhmm(change.occurredAt)}, ${formatDuration(minutesBefore)} before the first alert.${symptom}${commitPart}`,
      actions: [
        `Roll back ${name}${shaPart(change)}${target}`,
        `Confirm the errors stop on ${change.service ?? v.service} after the rollback, then fix forward from ${sha7(change.sha) ?? 'the release'} with a test that reproduces the failure`,
      ],
      keywords: ['deploy', 'deployment', 'rollback', 'roll back', 'release'],
      changeRef: change.sha ?? change.eventId,
      evidence: named.length > 0 ? 'direct' : 'temporal',
      minutesBefore,
    });
  });
}

export function upstreamDeploy(v: View): Hypothesis[] {
  const errors = matching(v.own, RE.error).length > 0;
  return deploysOf(v, (h) => h >= 1).map(({ change, minutesBefore, previousSha }) => {
    const dep = v.input.topology.dependencies.find((d) => lower(d.name) === lower(change.service));
    const support = [
      `${deployName(change)}${shaPart(change)}, a dependency of ${v.service} (${change.hops} hop${change.hops === 1 ? '' : 's'}), ${formatDuration(minutesBefore)} before the first alert`,
    ];
    const against: string[] = [];
    let score = 0.25 + 0.35 * proximity(minutesBefore) - 0.05 * (change.hops - 1);
    if (dep?.alerting) {
      score += 0.2;
      support.push(`${dep.name} itself alerts (${list(dep.alertNames.slice(0, 3))})`);
    }
    if (errors) score += 0.05;
    if (failedState(change.state)) {
      score -= 0.2;
      against.push(`the deployment ended in state ${change.state}`);
    }
    if (!isProduction(change.environment)) {
      score -= 0.25;
      against.push(`it went to ${change.environment}, not production`);
    }
    const mentioned = v.own.some((a) => lower(textOf(a)).includes(lower(change.service)));
    if (mentioned) {
      score += 0.05;
      support.push(`${v.service}'s errors name ${change.service}`);
    }
    const name = deployName(change);
    const target = previousSha
      ? ` back to the previous release (sha ${sha7(previousSha)})`
      : ' to the previous release';
    return draft('upstream_deploy', {
      statement: `${name[0]!.toUpperCase()}${name.slice(1)}${shaPart(change)}, which ${v.service} depends on, broke ${v.service}`,
      subject: change.service ?? 'a dependency',
      score,
      support,
      against,
      sources: [change.eventId],
      rootCause: `A bad release of a dependency: ${name}${shaPart(change)} at ${hhmm(change.occurredAt)}, ${formatDuration(minutesBefore)} before ${v.service} started failing; ${v.service} depends on ${change.service}${dep?.alerting ? `, which alerts too (${list(dep.alertNames.slice(0, 3))})` : ''}.`,
      actions: [
        `Roll back ${name}${shaPart(change)}${target}`,
        `Check that ${v.service} recovers once ${change.service} is rolled back`,
      ],
      keywords: ['deploy', 'deployment', 'rollback', 'release', lower(change.service)],
      changeRef: change.sha ?? change.eventId,
      evidence: 'temporal',
      minutesBefore,
    });
  });
}

interface CandidateChange {
  change: ChangeObservation;
  commit: CommitObservation | null;
  minutesBefore: number;
}

/** Changes of the service (or of dependencies up to `maxHops`) before the first alert: pushes with their commits, and deployments. */
function ownChanges(v: View, lookbackProximity: (m: number) => number, maxHops = 0): CandidateChange[] {
  const out: CandidateChange[] = [];
  for (const change of v.input.changes) {
    if (change.hops > maxHops || change.changeType === 'feature_flag') continue;
    const minutesBefore = minutesBetween(change.occurredAt, v.first);
    if (lookbackProximity(minutesBefore) <= 0) continue;
    if (change.kind === 'code_change') {
      const commits = change.commits.filter((c) => !/^merge (pull request|branch)/i.test(c.message));
      for (const commit of commits.length > 0 ? commits : change.commits) out.push({ change, commit, minutesBefore });
      // A merged PR, a release or a generic change carries no commit list: the change itself counts.
      if (change.commits.length === 0) out.push({ change, commit: null, minutesBefore });
    } else if (!failedState(change.state)) {
      out.push({ change, commit: null, minutesBefore });
    }
  }
  return out;
}

const commitText = (c: CandidateChange) =>
  c.commit ? `${c.commit.message}\n${c.commit.files.join('\n')}` : `${c.change.description ?? ''}\n${c.change.title}`;
const changeName = (c: CandidateChange) =>
  c.commit
    ? `commit ${sha7(c.commit.id)} "${quote(firstLine(c.commit.message), 90)}"`
    : `${deployName(c.change)}${shaPart(c.change)}`;
/** The deployment that shipped a commit, when one is known. */
const shippedBy = (v: View, sha: string | null) =>
  sha
    ? latestDeploys(v.deployments).find((d) => d.sha === sha || commitsBehind(v, d).some((c) => c.id === sha))
    : undefined;

export function configChange(v: View): Hypothesis[] {
  const ownText = v.own.map(textOf).join('\n');
  const alertWords = distinctiveWords(ownText);
  const configTypes = new Set(['gitops', 'config', 'infrastructure']);
  const candidates = ownChanges(v, proximity, 2).filter(
    (c) => configTypes.has(c.change.changeType) || RE.config.test(commitText(c)),
  );
  return candidates.map((c) => {
    const overlap = [...distinctiveWords(c.commit ? c.commit.message : commitText(c))].filter((w) => alertWords.has(w));
    let score = 0.45 + 0.35 * proximity(c.minutesBefore);
    const hops = c.change.hops;
    const dep =
      hops > 0 ? v.input.topology.dependencies.find((d) => lower(d.name) === lower(c.change.service)) : undefined;
    if (hops > 0) score += dep?.alerting ? 0 : -0.1 * hops;
    const target = hops > 0 ? (c.change.service ?? v.service) : v.service;
    const files = (c.commit?.files.length ? c.commit.files : c.change.paths).slice(0, 2);
    const support = [
      `${changeName(c)} changes configuration (${quote(commitText(c).match(RE.config)?.[0] ?? 'config', 40)}) ${formatDuration(c.minutesBefore)} before the first alert`,
    ];
    if (overlap.length > 0) {
      score += 0.15;
      support.push(`the alerts name what it changed (${overlap.slice(0, 4).join(', ')})`);
    } else {
      score -= 0.1;
    }
    const against: string[] = [];
    if (v.flapping) {
      score -= 0.15;
      against.push('the alert flaps, which a configuration change does not explain');
    }
    const sha = c.commit?.id ?? c.change.sha;
    const repo = c.change.repository ?? c.change.service ?? v.service;
    const deploy = shippedBy(v, sha);
    const where = files.length > 0 ? ` (${files.join(', ')})` : '';
    return draft('config_change', {
      statement:
        `Configuration change ${sha7(sha) ?? ''} of ${target} ("${quote(firstLine(c.commit?.message ?? c.change.title), 80)}")`.replace(
          '  ',
          ' ',
        ),
      subject: target,
      score,
      support,
      against,
      sources: [c.change.eventId, ...(deploy ? [deploy.eventId] : [])],
      rootCause: `A configuration change${hops > 0 ? ` of ${target}, which ${v.service} depends on` : ''}: ${changeName(c)} in ${repo}${where}, ${formatDuration(c.minutesBefore)} before the first alert${deploy ? ` (shipped by ${deployName(deploy)})` : ''}; the failures match what it changed${overlap.length > 0 ? ` (${overlap.slice(0, 4).join(', ')})` : ''}.`,
      actions: [
        `Revert config change ${sha7(sha) ?? ''} in ${repo}${where} ("${quote(firstLine(c.commit?.message ?? c.change.title), 80)}") and re-apply it to ${target}`.replace(
          '  ',
          ' ',
        ),
        ...(deploy ? [`If the revert cannot ship quickly, roll back ${deployName(deploy)}${shaPart(deploy)}`] : []),
        `Add a check for this setting to ${v.service}'s deploy pipeline so the value is validated before release`,
      ],
      keywords: ['config', 'configuration', 'revert', 'rollback', 'settings'],
      changeRef: sha ?? c.change.eventId,
      evidence: overlap.length > 0 ? 'direct' : 'temporal',
      minutesBefore: c.minutesBefore,
    });
  });
}

const MEMORY_CODE =
  /(cache|buffer|memo|map|dict|list|pool|memory|leak|retain|global|listener|subscri|queue|array|heap|in[- ]process|static)/i;

export function memoryLeak(v: View): Hypothesis[] {
  const sameService = v.scope.filter(
    (a) => v.own.includes(a) || (a.service !== null && lower(a.service) === lower(v.input.incident.service)),
  );
  const signals = matching(sameService, RE.memory);
  if (signals.length === 0 || !signals.some((a) => v.own.includes(a))) return [];
  const oom = signals.some((a) => /oom|out ?of ?memory|crashloop|restart/i.test(textOf(a)));
  // A leak grows slowly: any change of the service in the 6 h window counts.
  const relaxed = (m: number) => (m < -5 ? 0 : m <= 360 ? 1 - (m / 360) * 0.5 : 0);
  const changes = ownChanges(v, relaxed).sort((a, b) => {
    const am = MEMORY_CODE.test(commitText(a)) ? 1 : 0;
    const bm = MEMORY_CODE.test(commitText(b)) ? 1 : 0;
    return bm - am || a.minutesBefore - b.minutesBefore || (a.commit ? 0 : 1) - (b.commit ? 0 : 1);
  });
  const best = changes[0];
  const support = signals.slice(0, 3).map(alertLine);
  const base = 0.5 + (oom ? 0.05 : 0);
  if (!best) {
    return [
      draft('memory_leak', {
        statement: `Memory exhaustion on ${v.service}`,
        subject: v.service,
        score: base,
        support,
        against: ['no code change of the service in the 6 h before the first alert to blame'],
        sources: signals.map((a) => a.eventId),
        rootCause: `${v.service} runs out of memory (${says(signals[0]!)}); no recent change of the service explains it.`,
        actions: [
          `Restart the ${v.service} pods that are near their memory limit and capture a heap profile before they are killed`,
          `Raise ${v.service}'s memory limit temporarily while the heap profile is analysed`,
        ],
        evidence: 'direct',
        keywords: ['memory', 'oom', 'heap', 'leak'],
      }),
    ];
  }
  const sha = best.commit?.id ?? best.change.sha;
  const deploy = best.commit ? shippedBy(v, sha) : best.change;
  const suspicious = MEMORY_CODE.test(commitText(best));
  const score = base + 0.25 + 0.1 * relaxed(best.minutesBefore) + (suspicious ? 0.05 : 0);
  const revert = deploy
    ? `Roll back ${deployName(deploy)}${shaPart(deploy)}, which shipped ${changeName(best)}, and restart the OOM-killed ${v.service} pods`
    : `Revert ${changeName(best)} in ${best.change.repository ?? v.service} and redeploy ${v.service}; restart the OOM-killed pods meanwhile`;
  return [
    draft('memory_leak', {
      statement: `Memory leak in ${v.service} introduced by ${changeName(best)}`,
      subject: v.service,
      score,
      support: [
        ...support,
        `${changeName(best)} ${formatDuration(best.minutesBefore)} before the first alert${suspicious ? ' touches in-memory state' : ''}`,
      ],
      against: [],
      sources: [
        best.change.eventId,
        ...signals.map((a) => a.eventId),
        ...(deploy && deploy !== best.change ? [deploy.eventId] : []),
      ],
      rootCause: `A memory leak in ${v.service} introduced by ${changeName(best)}${best.commit ? '' : ` (${sha7(sha) ?? 'the change'})`}, ${formatDuration(best.minutesBefore)} before the first alert: memory grew until ${oom ? 'the pods were OOM-killed' : 'it reached the limit'} (${says(signals[0]!, 120)}).`,
      actions: [
        revert,
        `Take a heap profile of ${v.service} under load to confirm what ${sha7(sha) ?? 'the change'} retains before fixing forward`,
      ],
      evidence: 'direct',
      keywords: ['memory', 'oom', 'leak', 'heap', 'rollback'],
      changeRef: sha ?? best.change.eventId,
    }),
  ];
}
