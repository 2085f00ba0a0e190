/**
 * The gRPC retry of our Temporal client connections (ADR 0221). The SDK's own retry
 * interceptor (`makeGrpcRetryInterceptor`) sends a failed call again from a timer, as a new call
 * that neither the caller's cancellation nor the connection's close reaches: when the connection
 * is closed during a backoff, the timer throws "Channel has been shut down" out of the event loop
 * (an uncaught exception) and the call never settles. This one keeps the SDK's policy (which
 * statuses are retried, how long it backs off: `defaultGrpcRetryOptions`) and differs in three
 * ways:
 * - a call cancelled by its caller stops retrying: the pending backoff is cleared and the
 *   attempt in flight is cancelled too;
 * - a retry that cannot be made (the connection was closed meanwhile) ends the call with the
 *   status that made it retry, never with an exception thrown from a timer;
 * - a backoff never runs past the call's deadline: the retry is made at the deadline at the
 *   latest, where the attempt fails at once with the deadline's own status.
 */
import {
  InterceptingCall,
  ListenerBuilder,
  RequesterBuilder,
  status as grpcStatus,
  type Interceptor,
  type Metadata,
  type StatusObject,
} from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import {
  defaultGrpcRetryOptions,
  type ConnectionOptions,
  type GrpcRetryOptions,
  type TLSConfig,
} from '@temporalio/client';

/** What `nextCall` hands back: one attempt of the call. */
type Attempt = ReturnType<Parameters<Interceptor>[1]>;

function msUntil(deadline: unknown): number {
  if (deadline instanceof Date) return deadline.getTime() - Date.now();
  if (typeof deadline === 'number' && Number.isFinite(deadline)) return deadline - Date.now();
  return Number.POSITIVE_INFINITY; // no deadline
}

export function temporalRetryInterceptor(retryOptions: GrpcRetryOptions = defaultGrpcRetryOptions()): Interceptor {
  return (options, nextCall) => {
    let request: unknown;
    let response: unknown;
    let deliverResponse: ((message: unknown) => void) | undefined;
    let cancelled = false;
    /** Ends the backoff in progress at once (the retry then sees `cancelled`). */
    let wake: (() => void) | undefined;
    let retried: Attempt | undefined;

    const requester = new RequesterBuilder()
      .withStart((metadata: Metadata, _listener, next) => {
        let attempt = 1;
        const listener = new ListenerBuilder()
          .withOnReceiveMessage((message, nextMessage) => {
            response = message;
            deliverResponse = nextMessage;
          })
          .withOnReceiveStatus((firstStatus, nextStatus) => {
            const finish = (status: StatusObject) => {
              if (deliverResponse) deliverResponse(response);
              nextStatus(status);
            };
            const retry = (status: StatusObject) => {
              if (cancelled) return finish({ ...status, code: grpcStatus.CANCELLED, details: 'Cancelled on client' });
              attempt++;
              let call: Attempt;
              try {
                call = nextCall(options);
              } catch {
                return finish(status); // the connection was closed during the backoff
              }
              retried = call;
              call.start(metadata, {
                onReceiveMessage(message: unknown) {
                  response = message;
                },
                onReceiveStatus: settle,
              });
              call.sendMessage(request);
              call.halfClose();
            };
            const settle = (status: StatusObject) => {
              retried = undefined;
              if (cancelled || !retryOptions.retryableDecider(attempt, status)) return finish(status);
              const delay = Math.max(
                0,
                Math.min(retryOptions.delayFunction(attempt, status), msUntil(options.deadline)),
              );
              const timer = setTimeout(() => wake?.(), delay);
              wake = () => {
                clearTimeout(timer);
                wake = undefined;
                retry(status);
              };
            };
            settle(firstStatus);
          })
          .build();
        next(metadata, listener);
      })
      .withSendMessage((message, next) => {
        request = message;
        next(message);
      })
      .withCancel((next) => {
        cancelled = true;
        wake?.();
        retried?.cancelWithStatus(grpcStatus.CANCELLED, 'Cancelled on client');
        next();
      })
      .build();
    return new InterceptingCall(nextCall(options), requester);
  };
}

/**
 * gRPC's wait between two attempts to reconnect grows by 1.6 times from 1 s up to 120 s, and
 * calls fail at once while it lasts: after a Temporal outage of 150 s the api answered again
 * 46 s after the server was back. Capped at 5 s, it answers within one probe of its gate.
 */
export const TEMPORAL_RECONNECT_BACKOFF_MAX_MS = 5_000;

/**
 * The options of every Temporal client connection the service opens: its address, our retry and
 * the reconnect cap.
 */
export function temporalConnectionOptions(
  address: string,
  extra: Omit<ConnectionOptions, 'address' | 'interceptors'> = {},
): ConnectionOptions {
  return {
    ...extra,
    address,
    interceptors: [temporalRetryInterceptor()],
    channelArgs: { 'grpc.max_reconnect_backoff_ms': TEMPORAL_RECONNECT_BACKOFF_MAX_MS, ...extra.channelArgs },
  };
}

/**
 * How the service proves itself to a secured Temporal cluster or Temporal Cloud (ADR 0283): a
 * client certificate and its key (mTLS), an API key, or both. Paths, as the settings give them.
 */
export interface TemporalSecurity {
  certPath?: string | undefined;
  keyPath?: string | undefined;
  caPath?: string | undefined;
  serverName?: string | undefined;
  apiKey?: string | undefined;
}

/** What the client and the worker connections share of it (both SDK option types accept it). */
export interface TemporalConnectionSecurity {
  tls: TLSConfig | false;
  apiKey?: string;
}

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|localhost|\[?::1\]?)$/i;

function readPem(setting: string, file: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(file);
  } catch (err) {
    throw new Error(`${setting}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (!content.includes('-----BEGIN ')) throw new Error(`${setting}: ${file} is not a PEM file`);
  return content;
}

/**
 * The TLS and API key of a connection to `address`, its files read now so that a start-up with a
 * bad setting stops with the setting's name. TLS is on when a certificate, a CA or a server name
 * is given, and for an API key to any address but a loopback one (never sent in clear over a
 * network); a loopback address with only an API key stays plain text (a local sidecar or proxy).
 */
export function temporalConnectionSecurity(address: string, security: TemporalSecurity): TemporalConnectionSecurity {
  const { certPath, keyPath, caPath, serverName, apiKey } = security;
  if (Boolean(certPath) !== Boolean(keyPath)) {
    throw new Error(
      `${certPath ? 'TEMPORAL_TLS_KEY_PATH' : 'TEMPORAL_TLS_CERT_PATH'}: required with ${certPath ? 'TEMPORAL_TLS_CERT_PATH' : 'TEMPORAL_TLS_KEY_PATH'} (mTLS needs the client certificate and its key)`,
    );
  }
  const host = address.slice(0, address.lastIndexOf(':'));
  const wantsTls = Boolean(certPath || caPath || serverName) || (apiKey !== undefined && !LOOPBACK_HOST.test(host));
  const tls: TLSConfig | false = wantsTls
    ? {
        ...(certPath && keyPath
          ? {
              clientCertPair: {
                crt: readPem('TEMPORAL_TLS_CERT_PATH', certPath),
                key: readPem('TEMPORAL_TLS_KEY_PATH', keyPath),
              },
            }
          : {}),
        ...(caPath ? { serverRootCACertificate: readPem('TEMPORAL_TLS_CA_PATH', caPath) } : {}),
        ...(serverName ? { serverNameOverride: serverName } : {}),
      }
    : false;
  return { tls, ...(apiKey !== undefined ? { apiKey } : {}) };
}

/** A client connection's options with our retry and the cluster's credentials. */
export function securedConnectionOptions(address: string, security: TemporalSecurity): ConnectionOptions {
  return temporalConnectionOptions(address, temporalConnectionSecurity(address, security));
}

/** A worker connection's options (`NativeConnection.connect`) with the cluster's credentials. */
export function nativeConnectionOptions(
  address: string,
  security: TemporalSecurity,
): { address: string } & TemporalConnectionSecurity {
  return { address, ...temporalConnectionSecurity(address, security) };
}
