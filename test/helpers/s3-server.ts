/**
 * A small S3-compatible object server for tests (a fake of an edge we do not own): path-style
 * PUT and GET of objects, each request checked with its own AWS Signature Version 4
 * verification (Authorization header or presigned query, payload SHA-256, expiry).
 */
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeS3 {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Stored objects by `bucket/key`. */
  objects: Map<string, { body: Buffer; contentType: string | undefined }>;
  /** Every request: method, path and status answered. */
  requests: Array<{ method: string; path: string; status: number }>;
  stop(): Promise<void>;
}

const encode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

function signingKey(secret: string, date: string, region: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), 's3'), 'aws4_request');
}

function fail(res: ServerResponse, status: number, code: string): number {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code></Error>`);
  return status;
}

export async function startFakeS3(options: { buckets: string[] }): Promise<FakeS3> {
  const accessKeyId = 'TESTACCESSKEY';
  const secretAccessKey = 'test-secret-access-key-0123456789';
  const region = 'us-east-1';
  const objects: FakeS3['objects'] = new Map();
  const requests: FakeS3['requests'] = [];

  /** Returns an error code, or null when the signature holds. */
  function verify(req: IncomingMessage, body: Buffer): string | null {
    const url = new URL(req.url ?? '/', 'http://placeholder');
    const rawPath = (req.url ?? '/').split('?')[0]!;
    const query = [...url.searchParams.entries()];
    const presigned = url.searchParams.has('X-Amz-Signature');
    let credential: string, signedHeaders: string, signature: string, amzDate: string, payloadHash: string;
    if (presigned) {
      credential = url.searchParams.get('X-Amz-Credential') ?? '';
      signedHeaders = url.searchParams.get('X-Amz-SignedHeaders') ?? '';
      signature = url.searchParams.get('X-Amz-Signature') ?? '';
      amzDate = url.searchParams.get('X-Amz-Date') ?? '';
      payloadHash = 'UNSIGNED-PAYLOAD';
      const expires = Number(url.searchParams.get('X-Amz-Expires'));
      const signedAt = Date.parse(
        amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'),
      );
      if (!Number.isFinite(expires) || !Number.isFinite(signedAt) || Date.now() > signedAt + expires * 1000)
        return 'AccessDenied';
    } else {
      const match = /^AWS4-HMAC-SHA256 Credential=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]+)$/.exec(
        req.headers.authorization ?? '',
      );
      if (!match) return 'AccessDenied';
      [, credential, signedHeaders, signature] = match as unknown as [string, string, string, string];
      amzDate = String(req.headers['x-amz-date'] ?? '');
      payloadHash = String(req.headers['x-amz-content-sha256'] ?? '');
      if (payloadHash !== 'UNSIGNED-PAYLOAD' && payloadHash !== sha256(body)) return 'XAmzContentSHA256Mismatch';
    }
    const [keyId, date, credRegion, service, terminal] = credential.split('/');
    if (
      keyId !== accessKeyId ||
      credRegion !== region ||
      service !== 's3' ||
      terminal !== 'aws4_request' ||
      !amzDate.startsWith(date ?? '-')
    ) {
      return 'InvalidAccessKeyId';
    }
    const canonicalQuery = query
      .filter(([k]) => k !== 'X-Amz-Signature')
      .map(([k, v]) => [encode(k), encode(v)] as const)
      .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const headerNames = signedHeaders.split(';');
    const canonicalHeaders = headerNames
      .map(
        (h) =>
          `${h}:${String(req.headers[h] ?? '')
            .trim()
            .replace(/\s+/g, ' ')}\n`,
      )
      .join('');
    const canonicalRequest = [req.method, rawPath, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join(
      '\n',
    );
    const stringToSign = [
      'AWS4-HMAC-SHA256',
      amzDate,
      `${date}/${region}/s3/aws4_request`,
      sha256(canonicalRequest),
    ].join('\n');
    const expected = createHmac('sha256', signingKey(secretAccessKey, date!, region))
      .update(stringToSign)
      .digest('hex');
    return expected === signature ? null : 'SignatureDoesNotMatch';
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<number> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const rawPath = (req.url ?? '/').split('?')[0]!;
    const [, bucket, ...keyParts] = rawPath.split('/').map((p) => decodeURIComponent(p));
    const key = keyParts.join('/');
    if (!bucket || !key) return fail(res, 400, 'InvalidRequest');
    const refused = verify(req, body);
    if (refused) return fail(res, 403, refused);
    if (!options.buckets.includes(bucket)) return fail(res, 404, 'NoSuchBucket');
    if (req.method === 'PUT') {
      if (req.headers['transfer-encoding'] === 'chunked') return fail(res, 411, 'MissingContentLength');
      if (Number(req.headers['content-length']) !== body.length) return fail(res, 400, 'IncompleteBody');
      objects.set(`${bucket}/${key}`, { body, contentType: req.headers['content-type'] });
      res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` });
      res.end();
      return 200;
    }
    if (req.method === 'GET') {
      const object = objects.get(`${bucket}/${key}`);
      if (!object) return fail(res, 404, 'NoSuchKey');
      res.writeHead(200, {
        'content-type': object.contentType ?? 'application/octet-stream',
        'content-length': object.body.length,
      });
      res.end(object.body);
      return 200;
    }
    return fail(res, 405, 'MethodNotAllowed');
  }

  const server: Server = createServer((req, res) => {
    handle(req, res)
      .then((status) => requests.push({ method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, status }))
      .catch(() => fail(res, 500, 'InternalError'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    accessKeyId,
    secretAccessKey,
    region,
    objects,
    requests,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
