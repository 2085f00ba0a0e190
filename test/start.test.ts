/**
 * `npm start` (src/start.ts) as an operator runs it: killed with SIGKILL, it leaves its embedded
 * PostgreSQL and Temporal dev server running; the next start on the same data folder stops them
 * and comes up with the data kept, a second start beside a running one is refused, and a
 * SIGTERM stops everything and removes the pid files (decision 210).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../bench/stack.js';
import { projectRoot } from '../src/config.js';
import { isRunning, pidFromFile } from '../src/launcher/stale-processes.js';
import { eventually } from './helpers/webhooks.js';

const started: Stack[] = [];
afterAll(async () => {
  for (const stack of started.reverse()) await stack.stop({ keepData: true }).catch(() => undefined);
  for (const stack of started) {
    for (const file of [
      path.join(stack.dataDir, 'postgres', 'postmaster.pid'),
      path.join(stack.dataDir, 'temporal.pid'),
    ]) {
      const pid = pidFromFile(file);
      if (pid !== undefined && isRunning(pid, [stack.dataDir])) process.kill(pid, 'SIGKILL');
    }
    rmSync(stack.dataDir, { recursive: true, force: true });
  }
});

const api = async (stack: Stack, method: string, route: string, body?: unknown, key?: string) => {
  const res = await fetch(`${stack.baseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${key ?? stack.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, any> };
};

describe('npm start after it was killed', () => {
  it('stops what the killed start left running, comes up on the same data folder, and refuses a second start beside it', async () => {
    const first = await startStack();
    started.push(first);
    // Its output is piped here, as into a log file: the admin token is not in it (ADR 0281).
    expect(first.output()).toContain('Admin token:');
    expect(first.output()).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/);
    const key = await api(first, 'POST', '/v1/api-keys', { name: 'restart' });
    expect(key.status).toBe(201);
    const posted = await api(
      first,
      'POST',
      `/v1/webhooks/${first.tenantId}/generic`,
      { name: 'BeforeTheKill', severity: 'high', service: 'checkout' },
      key.body.key,
    );
    expect(posted.status).toBe(202);
    const incidentId = posted.body.incidentIds[0] as string;

    const postgresPid = pidFromFile(path.join(first.dataDir, 'postgres', 'postmaster.pid'));
    const temporalPid = pidFromFile(path.join(first.dataDir, 'temporal.pid'));
    expect(postgresPid).toBeDefined();
    expect(temporalPid).toBeDefined();
    process.kill(first.pid, 'SIGKILL');
    await eventually(async () => !isRunning(first.pid, []));
    // What a killed start leaves: its PostgreSQL and Temporal dev server, holding their ports.
    expect(isRunning(postgresPid!, [first.dataDir])).toBe(true);
    expect(isRunning(temporalPid!, ['start-dev', first.dataDir])).toBe(true);

    const second = await startStack({}, { dataDir: first.dataDir, ports: first.ports });
    started.push(second);
    expect(isRunning(postgresPid!, [first.dataDir])).toBe(false);
    expect(isRunning(temporalPid!, ['start-dev'])).toBe(false);
    // The same demo tenant and its data, on a fresh PostgreSQL and Temporal.
    expect(second.tenantId).toBe(first.tenantId);
    const kept = await api(second, 'GET', `/v1/incidents/${incidentId}`);
    expect([kept.status, kept.body.incidentId]).toEqual([200, incidentId]);

    // A second start on the same data folder while this one runs is refused, and harms nothing.
    const beside = spawnSync(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/launcher/start.ts')], {
      env: {
        ...process.env,
        DATA_DIR: second.dataDir,
        PORT: '45001',
        PG_PORT: '45002',
        TEMPORAL_PORT: '45003',
        TEMPORAL_UI_PORT: '45004',
        LOG_LEVEL: 'warn',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(beside.status).toBe(1);
    expect(beside.stderr).toContain(`Another npm start (pid ${second.pid}) is running on ${second.dataDir}`);
    expect((await api(second, 'GET', `/v1/incidents/${incidentId}`)).status).toBe(200);

    // A SIGTERM stops it all and clears its pid files.
    const secondTemporal = pidFromFile(path.join(second.dataDir, 'temporal.pid'))!;
    await second.stop({ keepData: true });
    expect(isRunning(secondTemporal, ['start-dev'])).toBe(false);
    expect(existsSync(path.join(second.dataDir, 'temporal.pid'))).toBe(false);
    expect(readdirSync(path.join(second.dataDir, 'launcher.lock'))).toEqual([]);
    expect(existsSync(path.join(second.dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 240_000);
});

/**
 * Kills the process in `pidFile` with SIGKILL and waits for the supervision to record a new one
 * there (running, with `mustInclude` in its command line); answers its pid.
 */
async function killAndAwaitRestart(pidFile: string, mustInclude: string[]): Promise<number> {
  const crashed = pidFromFile(pidFile)!;
  process.kill(crashed, 'SIGKILL');
  await eventually(async () => !isRunning(crashed, mustInclude));
  return eventually(async () => {
    const pid = pidFromFile(pidFile);
    return pid !== undefined && pid !== crashed && isRunning(pid, mustInclude) ? pid : undefined;
  }, 30_000);
}

describe('npm start when its Temporal dev server dies', () => {
  it('starts the server again, and the calls that need Temporal go through again', async () => {
    const stack = await startStack();
    started.push(stack);
    const before = await api(stack, 'POST', '/v1/incidents/chat', {
      title: 'Before the crash',
      description: 'Opened while Temporal ran',
    });
    expect(before.status).toBe(201);
    const pidFile = path.join(stack.dataDir, 'temporal.pid');
    // A new server process, recorded where the next start looks for leftovers.
    const restarted = await killAndAwaitRestart(pidFile, ['start-dev', stack.dataDir]);
    // A status change waits for the incident's workflow to answer: Temporal serves again, with
    // the state it had (the same SQLite file).
    const moved = await eventually(async () => {
      const res = await api(stack, 'PATCH', `/v1/incidents/${before.body.incidentId}`, { status: 'investigating' });
      return res.status === 200 ? res : undefined;
    }, 60_000);
    expect(moved.body).toMatchObject({ incidentId: before.body.incidentId, status: 'investigating' });
    await stack.stop({ keepData: true });
    expect(isRunning(restarted, ['start-dev'])).toBe(false);
    expect(existsSync(pidFile)).toBe(false);
  }, 240_000);
});

describe('npm start when its embedded PostgreSQL dies', () => {
  it('starts PostgreSQL again on the same data, and the api serves again', async () => {
    const stack = await startStack();
    started.push(stack);
    const before = await api(stack, 'POST', '/v1/incidents/chat', {
      title: 'Before the crash',
      description: 'Opened while PostgreSQL ran',
    });
    expect(before.status).toBe(201);
    // A new postmaster on the same data folder (its crashed backends may hold the shared memory
    // for a moment, which the supervision's retries ride out).
    const restarted = await killAndAwaitRestart(path.join(stack.dataDir, 'postgres', 'postmaster.pid'), [
      stack.dataDir,
    ]);
    // The pools reconnect on their own: what was committed before the crash is there, and new
    // writes go through.
    const read = await eventually(async () => {
      const res = await api(stack, 'GET', `/v1/incidents/${before.body.incidentId}`);
      return res.status === 200 ? res : undefined;
    }, 30_000);
    expect(read.body).toMatchObject({ incidentId: before.body.incidentId, title: 'Before the crash' });
    const after = await api(stack, 'POST', '/v1/incidents/chat', {
      title: 'After the crash',
      description: 'Opened once PostgreSQL was back',
    });
    expect(after.status).toBe(201);
    // The launcher said what happened, and stops the new PostgreSQL with everything else.
    expect(stack.output()).toMatch(/the embedded PostgreSQL exited; restarting it/);
    expect(stack.output()).toMatch(/the embedded PostgreSQL was restarted/);
    await stack.stop({ keepData: true });
    expect(isRunning(restarted, [stack.dataDir])).toBe(false);
  }, 240_000);
});

describe('npm start stopped by Ctrl-C', () => {
  it('stops everything without restarting what the signal stopped first', async () => {
    const stack = await startStack();
    started.push(stack);
    expect((await api(stack, 'GET', '/v1/incidents')).status).toBe(200);
    const postgresPid = pidFromFile(path.join(stack.dataDir, 'postgres', 'postmaster.pid'))!;
    const temporalPid = pidFromFile(path.join(stack.dataDir, 'temporal.pid'))!;
    // A terminal's Ctrl-C signals the whole foreground process group: PostgreSQL and the dev
    // server stop at once, before the launcher comes to them.
    process.kill(-stack.pid, 'SIGINT');
    await stack.stopped();
    expect(stack.output()).not.toMatch(/restart/);
    expect(stack.output()).not.toMatch(/error while stopping/);
    expect(isRunning(postgresPid, [stack.dataDir])).toBe(false);
    expect(isRunning(temporalPid, ['start-dev'])).toBe(false);
    expect(pidFromFile(path.join(stack.dataDir, 'postgres', 'postmaster.pid'))).toBeUndefined();
    expect(existsSync(path.join(stack.dataDir, 'temporal.pid'))).toBe(false);
  }, 120_000);
});
