/**
 * bench:export — 1,000,000 audit rows exported by the real worker process (`src/temporal/worker.ts`),
 * submitted through the real api process (`src/api/server.ts`), in both formats. Prints rows per
 * second (from the job's startedAt to completedAt) and the worker's peak RSS (VmHWM).
 * Targets: ≥ 50,000 rows/s, RSS ≤ 200 MiB.
 *
 * Seeding: sealing 1M rows through the chain trigger would take minutes (~0.25 ms a row), so the
 * rows are COPYed with triggers disabled (`session_replication_role = replica`, superuser) and the
 * bench computes seq, prev_hash and hash itself with the same canonical form as the trigger
 * (checked on sample rows against `audit_entry_hash`).
 *
 * Usage: npm run bench:export [-- --rows 1000000]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import postgres from 'postgres';
import { signToken } from '../src/auth/tokens.js';
import { projectRoot } from '../src/config.js';
import { connectDatabase, runMigrations } from '../src/db/client.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { createTenant } from '../src/db/repositories/tenants.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { findTemporalCli } from '../src/launcher/temporal-cli.js';
import { freePort } from '../test/helpers/ports.js';

const rowsArg = process.argv.indexOf('--rows');
const ROWS = rowsArg > 0 ? Number(process.argv[rowsArg + 1]) : 1_000_000;
const JWT_SECRET = randomBytes(32).toString('hex');
const quiet = () => undefined;

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/** Runs a compiled entry (`dist/…`, built by `npm run build` at the start), as production does. */
function spawnEntry(entry: string, env: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(projectRoot, entry)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (ready.test(out)) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code}:\n${out}`)));
  });
}

/** COPYs `rows` audit rows for a tenant with a valid hash chain computed here. */
async function seed(sql: postgres.Sql, tenantId: string, rows: number): Promise<void> {
  const [head] = await sql<
    Array<{ last_seq: string; last_hash: string }>
  >`select last_seq::text, last_hash from audit_chain_heads where tenant_id = ${tenantId}`;
  let seq = Number(head?.last_seq ?? 0);
  let prev = head?.last_hash ?? '0'.repeat(64);
  const start = Date.now() - 6 * 3_600_000;
  const actions = ['incident.created', 'incident.status_changed', 'api_key.created', 'tenant.updated'];
  const actors = ['user', 'api_key', 'system'] as const;
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
    const writable =
      await tx`copy audit_log (id, tenant_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
      incident_id, request_id, workflow_id, history_event_id, details, seq, prev_hash, hash) from stdin`.writable();
    const write = (chunk: string) =>
      writable.write(chunk) ? Promise.resolve() : new Promise<void>((r) => writable.once('drain', () => r()));
    let buffer = '';
    for (let i = 0; i < rows; i++) {
      seq++;
      const id = `aud_bench_${String(i).padStart(8, '0')}`;
      const occurredAt = new Date(start + Math.floor((i * 6 * 3_600_000) / rows)).toISOString();
      const actorType = actors[i % 3]!;
      const actorId = `user-${i % 500}`;
      const action = actions[i % 4]!;
      const targetId = `inc_bench_${i % 10_000}`;
      const incidentId = i % 2 === 0 ? targetId : '';
      const requestId = `req_${i}`;
      const workflowId = actorType === 'system' ? targetId : '';
      const historyEventId = actorType === 'system' ? String(i % 1000) : '';
      const details = `{"n": ${i}, "source": "bench"}`; // PostgreSQL's jsonb text of this object
      const content = [
        'v1',
        tenantId,
        String(seq),
        id,
        occurredAt,
        actorType,
        actorId,
        action,
        'incident',
        targetId,
        incidentId,
        requestId,
        workflowId,
        historyEventId,
        details,
      ].join('\x1f');
      const hash = createHash('sha256').update(`${prev}\x1e${content}`).digest('hex');
      const nul = (v: string) => (v === '' ? '\\N' : v);
      buffer += `${id}\t${tenantId}\t${occurredAt}\t${actorType}\t${actorId}\t${action}\tincident\t${targetId}\t${nul(incidentId)}\t${requestId}\t${nul(workflowId)}\t${nul(historyEventId)}\t${details}\t${seq}\t${prev}\t${hash}\n`;
      prev = hash;
      if (buffer.length > 1 << 20) {
        await write(buffer);
        buffer = '';
      }
    }
    await write(buffer);
    await new Promise<void>((resolve, reject) => writable.end((err?: Error | null) => (err ? reject(err) : resolve())));
    await tx`insert into audit_chain_heads (tenant_id, last_seq, last_hash) values (${tenantId}, ${seq}, ${prev})
             on conflict (tenant_id) do update set last_seq = excluded.last_seq, last_hash = excluded.last_hash`;
  });
  const [check] = await sql<Array<{ ok: string; n: string }>>`
    select count(*) filter (where hash = audit_entry_hash(a))::text as ok, count(*)::text as n from audit_log a
    where tenant_id = ${tenantId} and seq in (select unnest(array[1, ${Math.ceil(seq / 2)}, ${seq}]::bigint[]))`;
  if (check?.ok !== check?.n) throw new Error('the seeded chain does not match audit_entry_hash');
}

async function countLines(file: string): Promise<number> {
  let n = 0;
  for await (const _line of createInterface({
    input: createReadStream(file).pipe(createGunzip()),
    crlfDelay: Infinity,
  }))
    n++;
  return n;
}

async function main() {
  const root = mkdtempSync(path.join(tmpdir(), 'iis-bench-export-'));
  chmodSync(root, 0o755); // the embedded PostgreSQL runs as its own user and must reach its folder
  const exportDir = path.join(root, 'exports');
  const bundlePath = path.join(root, 'workflow-bundle.js');
  // Production-like processes: compiled JavaScript and a prebuilt workflow bundle (as in the image).
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(projectRoot, 'dist/temporal/bundle-workflows.js'), bundlePath], {
    stdio: 'inherit',
  });
  const children: ChildProcess[] = [];
  const [pg, temporal] = await Promise.all([
    freePort().then((port) =>
      startEmbeddedPostgres({ dataDir: path.join(root, 'pg'), port, databases: ['bench'], log: quiet }),
    ),
    freePort().then(async (port) =>
      startDevServer({
        cliPath: (await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log: quiet })).path,
        port,
        namespace: 'default',
        log: quiet,
      }),
    ),
  ]);
  const databaseUrl = pg.url('bench');
  const database = connectDatabase(databaseUrl, { max: 4 });
  try {
    await runMigrations(databaseUrl);
    const tenant = await createTenant(database.db, { name: 'Export bench', plan: 'plan_business' });
    let seeded = Date.now();
    await seed(postgres(pg.url('bench'), { max: 1, onnotice: quiet }), tenant.id, ROWS);
    seeded = Date.now() - seeded;
    await database.sql`vacuum analyze audit_log`;
    console.log(
      `seeded ${ROWS.toLocaleString('en-US')} audit rows in ${(seeded / 1000).toFixed(1)} s (COPY with triggers off; chain computed by the bench and checked against audit_entry_hash)`,
    );

    const port = await freePort();
    const env = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      JWT_SECRET,
      SKILL_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      EXPORT_DIR: exportDir,
      PORT: String(port),
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      // As in production (the Docker image): a prebuilt workflow bundle, no webpack in the worker.
      WORKFLOW_BUNDLE_PATH: bundlePath,
      // The worker's memory settings from docker-compose.yml.
      NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS ?? '--max-semi-space-size=2',
      MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? '2',
    };
    const worker = await spawnEntry('dist/temporal/worker.js', env, /worker running/);
    children.push(worker);
    children.push(await spawnEntry('dist/api/server.js', env, /listening|api running|http:\/\//i));
    const baseUrl = `http://127.0.0.1:${port}`;
    const token = signToken({
      secret: JWT_SECRET,
      tenantId: tenant.id,
      role: 'admin',
      sub: 'bench',
      email: 'bench@example.test',
      ttlSeconds: 3600,
    });
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${baseUrl}${url}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };

    console.log(`worker RSS before exports ${status(worker.pid!, 'VmRSS').toFixed(0)} MiB`);
    const results: string[] = [];
    for (const format of (process.env.BENCH_FORMATS ?? 'ndjson,csv').split(',') as Array<'ndjson' | 'csv'>) {
      const submitted = await call('POST', '/v1/audit/export', {
        format,
        from: new Date(Date.now() - 24 * 3_600_000).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
      });
      // Reset the worker's peak RSS (VmHWM) so it measures this export alone (Linux ≥ 4.0).
      writeFileSync(`/proc/${worker.pid!}/clear_refs`, '5');
      const before = status(worker.pid!, 'VmRSS');
      if (submitted.status !== 202)
        throw new Error(`POST /v1/audit/export: ${submitted.status} ${JSON.stringify(submitted.body)}`);
      let peakSampled = 0;
      let job: Record<string, any>;
      for (;;) {
        peakSampled = Math.max(peakSampled, status(worker.pid!, 'VmRSS'));
        job = (await call('GET', `/v1/audit/export/${submitted.body.exportId}`)).body;
        if (job.status === 'completed' || job.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      if (job.status !== 'completed') throw new Error(`export failed: ${job.failure}`);
      const seconds = (Date.parse(job.completedAt) - Date.parse(job.startedAt)) / 1000;
      const file = path.join(exportDir, tenant.id, `${job.exportId}.${format}.gz`);
      const lines = await countLines(file);
      const expectedLines = job.rowCount + (format === 'csv' ? 1 : 0);
      const line =
        `${format.padEnd(6)}  rows ${job.rowCount.toLocaleString('en-US')}  ${seconds.toFixed(2)} s  ` +
        `${Math.round(job.rowCount / seconds).toLocaleString('en-US')} rows/s  gzip ${(job.bytes / 1024 / 1024).toFixed(1)} MiB  ` +
        `worker RSS ${before.toFixed(0)} MiB before, peak ${Math.max(peakSampled, status(worker.pid!, 'VmHWM')).toFixed(0)} MiB during  ` +
        `(file lines ${lines === expectedLines ? 'match' : `MISMATCH ${lines} != ${expectedLines}`})`;
      console.log(line);
      results.push(line);
    }
    console.log(
      'targets: ≥ 50,000 rows/s, worker RSS ≤ 200 MiB (peak = the worker process VmHWM, reset before each export)',
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    await database.close();
    await temporal.stop();
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
