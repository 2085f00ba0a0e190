/**
 * The api's and the worker's Temporal connections to a secured cluster (ADR 0283), through a real
 * TLS gRPC proxy in front of the dev server that requires a client certificate from its CA (made
 * now with openssl) and an API key, as Temporal Cloud does.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  nativeConnectionOptions,
  securedConnectionOptions,
  temporalConnectionSecurity,
  type TemporalSecurity,
} from '../../src/temporal/connection.js';
import { housekeepingFamilies, type HousekeepingFamily } from '../../src/workflows/messages-housekeeping.js';
import { makeTestPki, startGrpcProxy, type GrpcProxy, type TestPki } from '../helpers/tls-proxy.js';

const API_KEY = 'tcld-test-key-8f2a61';
let pki: TestPki;
let secured: GrpcProxy;
let plain: GrpcProxy;

beforeAll(async () => {
  pki = makeTestPki();
  const upstream = inject('temporalAddress');
  secured = await startGrpcProxy({ upstream, tls: { pki }, apiKey: API_KEY });
  plain = await startGrpcProxy({ upstream, apiKey: API_KEY });
});
afterAll(async () => {
  await secured?.stop();
  await plain?.stop();
});

const mtls = (): TemporalSecurity => ({
  certPath: pki.clientCert,
  keyPath: pki.clientKey,
  caPath: pki.caCert,
  serverName: 'temporal.test',
  apiKey: API_KEY,
});

describe('a worker and a client through mTLS and an API key', () => {
  it('run a workflow, showing the proxy their certificate and the key as a bearer token', async () => {
    const security = mtls();
    const native = await NativeConnection.connect(nativeConnectionOptions(secured.address, security));
    const connection = await Connection.connect(securedConnectionOptions(secured.address, security));
    const taskQueue = `tls-${Date.now()}`;
    const purged: HousekeepingFamily[] = [];
    const worker = await Worker.create({
      connection: native,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: {
        purgeExpiredRows: async (family: HousekeepingFamily) => {
          purged.push(family);
          return { [family]: 1 };
        },
      },
    });
    try {
      const result = await worker.runUntil(
        new Client({ connection, namespace: 'default' }).workflow.execute('housekeepingWorkflow', {
          taskQueue,
          workflowId: `tls-housekeeping-${taskQueue}`,
        }),
      );
      expect(Object.keys(result as Record<string, number>).sort()).toEqual([...housekeepingFamilies].sort());
      expect(purged).toEqual([...housekeepingFamilies]);
    } finally {
      await connection.close();
      await native.close();
    }
    expect([...secured.seen.clientNames]).toEqual(['incident-worker']);
    expect([...secured.seen.authorizations]).toEqual([`Bearer ${API_KEY}`]);
    expect(secured.seen.refused).toBe(0);
  }, 60_000);

  it('are refused with a certificate of another CA, and with a wrong API key', async () => {
    const stranger = { ...mtls(), certPath: pki.strangerCert, keyPath: pki.strangerKey };
    await expect(
      Connection.connect({ ...securedConnectionOptions(secured.address, stranger), connectTimeout: 2_000 }),
    ).rejects.toThrow();
    await expect(
      NativeConnection.connect(nativeConnectionOptions(secured.address, { ...mtls(), apiKey: 'wrong' })),
    ).rejects.toThrow(/invalid API key|Unauthenticated/i);
    expect(secured.seen.refused).toBeGreaterThanOrEqual(2);
  }, 30_000);
});

describe('an API key to a loopback address', () => {
  it('goes in clear text as a bearer token (a local sidecar), and a wrong one is refused', async () => {
    expect(temporalConnectionSecurity(plain.address, { apiKey: API_KEY }).tls).toBe(false);
    const connection = await Connection.connect(securedConnectionOptions(plain.address, { apiKey: API_KEY }));
    try {
      const described = await connection.workflowService.describeNamespace({ namespace: 'default' });
      expect(described.namespaceInfo?.name).toBe('default');
    } finally {
      await connection.close();
    }
    expect(plain.seen.authorizations).toContain(`Bearer ${API_KEY}`);
    // Connecting asks the server about itself: a wrong key fails there, with the proxy's answer.
    const refused = await Connection.connect(securedConnectionOptions(plain.address, { apiKey: 'wrong' })).then(
      () => null,
      (err: Error) => err,
    );
    expect(String(refused?.cause)).toMatch(/16 UNAUTHENTICATED: invalid API key/);
  });
});

describe('settings that cannot work stop the start-up, naming the setting', () => {
  it('a certificate without its key, or a key without its certificate', () => {
    expect(() => loadConfig({ TEMPORAL_TLS_CERT_PATH: pki.clientCert })).toThrow(ConfigError);
    expect(() => loadConfig({ TEMPORAL_TLS_KEY_PATH: pki.clientKey })).toThrow(/TEMPORAL_TLS_CERT_PATH/);
    expect(() => temporalConnectionSecurity('temporal.example.com:7233', { certPath: pki.clientCert })).toThrow(
      /^TEMPORAL_TLS_KEY_PATH: required with TEMPORAL_TLS_CERT_PATH/,
    );
  });

  it('a file that cannot be read, or is no PEM file', () => {
    expect(() =>
      temporalConnectionSecurity('temporal.example.com:7233', { ...mtls(), caPath: `${pki.dir}/missing.pem` }),
    ).toThrow(/^TEMPORAL_TLS_CA_PATH: cannot read .*missing\.pem \(ENOENT\)/);
    expect(() =>
      temporalConnectionSecurity('temporal.example.com:7233', { ...mtls(), keyPath: `${pki.dir}/server.ext` }),
    ).toThrow(/^TEMPORAL_TLS_KEY_PATH: .*server\.ext is not a PEM file/);
  });

  it('an API key to a remote address turns TLS on; loaded settings reach the connection', () => {
    expect(temporalConnectionSecurity('ns.a1b2c.tmprl.cloud:7233', { apiKey: API_KEY })).toEqual({
      tls: {},
      apiKey: API_KEY,
    });
    const config = loadConfig({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS_SERVER_NAME: 'temporal.test' });
    expect(config.temporal.security).toMatchObject({ apiKey: API_KEY, serverName: 'temporal.test' });
    expect(temporalConnectionSecurity('127.0.0.1:7233', config.temporal.security).tls).toEqual({
      serverNameOverride: 'temporal.test',
    });
  });
});
