import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { startTestService, type TestService } from '../helpers/service.js';

const logLines: string[] = [];
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, logLines });
});
afterAll(async () => {
  await svc?.stop();
});

interface RequestLine {
  msg: string;
  requestId?: string;
  clientRequestId?: string;
  path?: string;
}

const requestLines = () => logLines.map((l) => JSON.parse(l) as RequestLine).filter((l) => l.msg === 'request');

describe('request ids', () => {
  it("keeps the service's own id in the audit log, the response and the logs; a caller's id is logged beside it", async () => {
    const { tenantId, member } = await svc.newTenant();
    const res = await svc.api('POST', '/v1/notifications/stream-token', {
      token: member,
      headers: { 'x-request-id': 'my-id' },
    });
    expect(res.status).toBe(201);
    const serviceId = res.headers.get('x-request-id');
    expect(serviceId).toMatch(/^req_[0-9a-z]{26}$/);

    const [row] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.action, 'stream_token.issued')));
    expect(row!.requestId).toBe(serviceId);

    const line = requestLines().find((l) => l.requestId === serviceId);
    expect(line).toMatchObject({
      requestId: serviceId,
      clientRequestId: 'my-id',
      path: '/v1/notifications/stream-token',
    });
    expect(requestLines().some((l) => l.requestId === 'my-id')).toBe(false);
  });

  it("makes an id of its own for every request, and leaves out a caller's id that is not a plain token", async () => {
    const plain = await svc.api('GET', '/v1/billing/plans');
    const unsafe = await svc.api('GET', '/v1/billing/plans', { headers: { 'x-request-id': 'bad id with spaces' } });
    const long = await svc.api('GET', '/v1/billing/plans', { headers: { 'x-request-id': 'x'.repeat(129) } });
    const ids = [plain, unsafe, long].map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^req_/);
    expect(new Set(ids).size).toBe(3);
    const lines = requestLines().filter((l) => ids.includes(l.requestId!));
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).not.toHaveProperty('clientRequestId');
  });
});
