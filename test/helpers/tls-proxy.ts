/**
 * A gRPC proxy in front of the Temporal dev server, standing in for a secured cluster or
 * Temporal Cloud (ADR 0283): over TLS that requires a client certificate signed by its CA, or in
 * clear text, and, given an API key, refusing calls whose `authorization` is not `Bearer <key>`
 * with UNAUTHENTICATED as Temporal Cloud does. It records what the clients showed it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';

export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A certificate and key from another CA, which the proxy must refuse. */
  strangerCert: string;
  strangerKey: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function issue(dir: string, name: string, ca: string, subject: string, extensions: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial'].concat([
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ]),
    dir,
  );
}

/** A CA made now, a server certificate for `temporal.test` and a client certificate it signed. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), 'temporal-pki-'));
  for (const ca of ['ca', 'stranger-ca']) {
    openssl(
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
        '-keyout',
        `${ca}.key`,
        '-out',
        `${ca}.pem`,
        '-days',
        '2',
        '-subj',
        `/CN=${ca} test`,
      ]),
      dir,
    );
  }
  issue(
    dir,
    'server',
    'ca',
    '/CN=temporal.test',
    'subjectAltName=DNS:temporal.test\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
  );
  const client = 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n';
  issue(dir, 'client', 'ca', '/CN=incident-worker', client);
  issue(dir, 'stranger', 'stranger-ca', '/CN=stranger', client);
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    caCert: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.pem'),
    strangerKey: file('stranger.key'),
  };
}

export interface GrpcProxy {
  address: string;
  /** The `authorization` headers calls carried, and the client certificates' common names. */
  seen: { authorizations: Set<string>; clientNames: Set<string>; refused: number };
  stop(): Promise<void>;
}

type Headers = http2.IncomingHttpHeaders | http2.OutgoingHttpHeaders;
const without = (headers: Headers, names: string[]) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => !names.includes(k))) as http2.OutgoingHttpHeaders;

export async function startGrpcProxy(options: {
  upstream: string;
  tls?: { pki: TestPki };
  apiKey?: string;
}): Promise<GrpcProxy> {
  const seen = { authorizations: new Set<string>(), clientNames: new Set<string>(), refused: 0 };
  const upstream = http2.connect(`http://${options.upstream}`);
  upstream.on('error', () => undefined); // each call reports its own failure
  const server = options.tls
    ? http2.createSecureServer({
        key: readFileSync(options.tls.pki.serverKey),
        cert: readFileSync(options.tls.pki.serverCert),
        ca: readFileSync(options.tls.pki.caCert),
        requestCert: true,
        rejectUnauthorized: true,
      })
    : http2.createServer();
  server.on('stream', (stream, headers) => {
    const authorization = headers.authorization;
    if (authorization) seen.authorizations.add(authorization);
    const socket = stream.session?.socket as TLSSocket | undefined;
    const peer = options.tls ? socket?.getPeerCertificate() : undefined;
    if (peer?.subject?.CN) seen.clientNames.add(String(peer.subject.CN));
    if (options.apiKey && authorization !== `Bearer ${options.apiKey}`) {
      seen.refused++;
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'invalid API key' },
        { endStream: true },
      );
      return;
    }
    const call = upstream.request(without(headers, [':scheme', ':authority']));
    stream.pipe(call);
    call.on('response', (answer) => {
      // A trailers-only answer (an error) carries its status in its headers and ends there.
      const trailersOnly = answer['grpc-status'] !== undefined;
      stream.respond(without(answer, []), trailersOnly ? { endStream: true } : { waitForTrailers: true });
      if (trailersOnly) return;
      let trailers: http2.OutgoingHttpHeaders = {};
      call.on('trailers', (t) => {
        trailers = without(t, []);
      });
      stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      call.pipe(stream);
    });
    call.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('close', () => {
      if (!call.closed) call.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.on('error', () => undefined);
  });
  server.on('sessionError', () => undefined);
  server.on('tlsClientError', () => {
    seen.refused++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    async stop() {
      for (const session of sessions) session.destroy();
      upstream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
