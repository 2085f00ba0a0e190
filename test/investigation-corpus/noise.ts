/**
 * Distractors an on-call engineer sees beside every real incident: other services' deploys, a
 * flapping disk alert elsewhere, routine deploys hours earlier, low-severity noise, harmless
 * dependency bumps.
 */
import { prom } from './payloads/alerts.js';
import { deploymentStatus, pullRequestMerged, workflowRun } from './payloads/github.js';
import { cpuThrottling, filesystemFillingUp } from './payloads/kube.js';
import { hex, numId } from './payloads/time.js';
import type { Delivery } from './types.js';

/** A successful deployment_status of another service's repository. */
export const otherDeploy = (repo: string, at: number): Delivery =>
  deploymentStatus(
    { repo, id: numId(`${repo}:${at}`, 7), sha: hex(`${repo}:${at}`), at },
    { note: `distractor: ${repo} deployed` },
  );

/** The same service's routine deploy hours before the incident. */
export const routineDeploy = (repo: string, at = -240): Delivery =>
  deploymentStatus(
    { repo, id: numId(`${repo}:routine:${at}`, 7), sha: hex(`${repo}:routine:${at}`), at },
    { note: `distractor: routine deploy of ${repo} ${-at} minutes earlier` },
  );

/** A disk on a build or logging host that fills and clears every few hours. */
export const flappingDisk = (at: number, instance = 'ip-10-0-12-87.eu-west-1.compute.internal:9100'): Delivery =>
  prom([filesystemFillingUp(instance, '/var/lib/docker', at, 13.8)], {
    groupBy: ['namespace'],
    note: 'distractor: a disk elsewhere that flaps',
  });

/** kubelet's info-level CPU throttling of some unrelated container. */
export const throttlingNoise = (at: number, workload = 'fluent-bit', ns = 'logging'): Delivery =>
  prom([cpuThrottling(ns, workload, 'ip-10-0-5-140.eu-west-1.compute.internal', at, 31)], {
    groupBy: ['namespace'],
    note: 'distractor: low-severity throttling noise',
  });

/** A Dependabot bump merged and shipped by the repository's deploy workflow: harmless. */
export function harmlessBump(
  repo: string,
  at: number,
  pkg = 'eslint-plugin-import',
  from = '2.29.0',
  to = '2.29.1',
): Delivery[] {
  const sha = hex(`${repo}:${pkg}:${to}`);
  return [
    pullRequestMerged(
      {
        repo,
        number: 1000 + (numId(repo, 3) % 900),
        title: `Bump ${pkg} from ${from} to ${to}`,
        body: `Bumps [${pkg}](https://github.com/import-js/${pkg}) from ${from} to ${to}.\n\n---\nDependabot will resolve any conflicts with this PR as long as you don't alter it yourself.`,
        head: `dependabot/npm_and_yarn/${pkg}-${to}`,
        sha,
        at,
        author: 'dependabot[bot]',
        labels: ['dependencies', 'javascript'],
        changedFiles: 2,
        additions: 5,
        deletions: 5,
      },
      { note: `distractor: harmless devDependency bump in ${repo}` },
    ),
    workflowRun(
      {
        repo,
        workflow: 'Deploy production',
        sha,
        message: `Bump ${pkg} from ${from} to ${to}`,
        at: at + 9,
        actor: 'dependabot[bot]',
      },
      { note: `distractor: the bump's deploy` },
    ),
  ];
}
