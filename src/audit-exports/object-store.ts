/**
 * S3-compatible object storage for audit exports: one signed PUT of a finished file (streamed
 * from disk, SigV4 with the file's SHA-256 as the signed payload hash) and presigned GET URLs.
 * Signing is aws4fetch's (no dependencies, WebCrypto); the HTTP calls are Node's fetch, each
 * with a timeout.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { AwsV4Signer } from 'aws4fetch';
import type { S3Config } from '../config.js';

/** A single PUT is limited to 5 GiB by S3. */
export const MAX_SINGLE_PUT_BYTES = 5 * 1024 ** 3;

export class ObjectStoreError extends Error {
  constructor(
    message: string,
    /** False for answers a retry cannot change (access denied, no such bucket). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ObjectStoreError';
  }
}

export interface ObjectStore {
  /** Uploads a file to `bucket/key` (overwriting: a retried upload is harmless). */
  putFile(
    bucket: string,
    key: string,
    filePath: string,
    options: { contentType: string; timeoutMs: number },
  ): Promise<void>;
  /** A GET URL of `bucket/key` signed at `signedAt`, valid `ttlSeconds` from then. */
  presignGet(bucket: string, key: string, signedAt: Date, ttlSeconds: number): Promise<string>;
}

/** `s3://bucket/key`: how an uploaded export's location is recorded. */
export function objectLocation(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

export function parseObjectLocation(location: string): { bucket: string; key: string } | undefined {
  const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(location);
  return match ? { bucket: match[1]!, key: match[2]! } : undefined;
}

function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

async function sha256File(filePath: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(filePath, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Amazon's `YYYYMMDDTHHMMSSZ`. */
function amzDate(at: Date): string {
  return at.toISOString().replace(/[:-]|\.\d{3}/g, '');
}

export function createObjectStore(config: S3Config): ObjectStore {
  const objectUrl = (bucket: string, key: string): URL => {
    const endpoint = new URL(config.endpoint);
    if (config.forcePathStyle) return new URL(`${config.endpoint}/${encodeURIComponent(bucket)}/${encodeKey(key)}`);
    endpoint.hostname = `${bucket}.${endpoint.hostname}`;
    endpoint.pathname = `/${encodeKey(key)}`;
    return endpoint;
  };
  const credentials = {
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    service: 's3',
    region: config.region,
  };

  return {
    async putFile(bucket, key, filePath, options) {
      const { size } = await stat(filePath);
      if (size > MAX_SINGLE_PUT_BYTES) {
        throw new ObjectStoreError(`the export is ${size} bytes; a single upload takes at most 5 GiB`, false);
      }
      const signed = await new AwsV4Signer({
        ...credentials,
        method: 'PUT',
        url: objectUrl(bucket, key).toString(),
        headers: { 'content-type': options.contentType, 'x-amz-content-sha256': await sha256File(filePath) },
      }).sign();
      signed.headers.set('content-length', String(size));
      let response: Response;
      try {
        response = await fetch(signed.url, {
          method: 'PUT',
          headers: signed.headers,
          body: Readable.toWeb(createReadStream(filePath, { highWaterMark: 1024 * 1024 })) as ReadableStream,
          duplex: 'half',
          redirect: 'error',
          signal: AbortSignal.timeout(options.timeoutMs),
        } as RequestInit);
      } catch (err) {
        throw new ObjectStoreError(`upload to ${bucket}/${key} failed: ${(err as Error).message}`, true);
      }
      const text = await response.text().catch(() => '');
      if (!response.ok) {
        const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${response.status}`;
        const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
        throw new ObjectStoreError(`upload to ${bucket}/${key} refused: ${code}`, retryable);
      }
    },

    async presignGet(bucket, key, signedAt, ttlSeconds) {
      const url = objectUrl(bucket, key);
      url.searchParams.set('X-Amz-Expires', String(ttlSeconds));
      const signed = await new AwsV4Signer({
        ...credentials,
        method: 'GET',
        url: url.toString(),
        signQuery: true,
        datetime: amzDate(signedAt),
      }).sign();
      return signed.url.toString();
    },
  };
}
