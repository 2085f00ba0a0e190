import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorGrantCredits, operatorSetPlan } from '../../src/billing/operator.js';
import { newId } from '../../src/ids.js';
import { appendEvent } from '../../src/outbox/append.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
});
afterAll(async () => {
  await svc?.stop();
});

interface SseMessage {
  id: string;
  event: string;
  data: { type: string; payload: Record<string, unknown> };
}

/** A real SSE client over HTTP: the messages so far, and a wait for one of a type. */
async function openStream(token: string, lastEventId?: string) {
  const abort = new AbortController();
  const res = await fetch(`${svc.baseUrl}/v1/notifications/stream`, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'text/event-stream',
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const messages: SseMessage[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const readOne = async (): Promise<void> => {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended');
    buffer += value;
    let index: number;
    while ((index = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, index).split('\n');
      buffer = buffer.slice(index + 2);
      const field = (name: string) => block.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
      const data = field('data');
      if (data) messages.push({ id: field('id')!, event: field('event')!, data: JSON.parse(data) });
    }
  };
  return {
    messages,
    /** Reads until a message of `type` arrives (the control event written after the billing ones). */
    async until(type: string, count = 1, timeoutMs = 10_000): Promise<SseMessage[]> {
      const deadline = Date.now() + timeoutMs;
      while (messages.filter((m) => m.event === type).length < count) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${type}`);
        await readOne();
      }
      return messages;
    },
    close: () => abort.abort(),
  };
}

/** An event every member sees, written after the billing ones: once it arrives, they would have too. */
const marker = (tenantId: string) =>
  appendEvent(svc.database.db, {
    tenantId,
    type: 'incident.created',
    payload: { incidentId: newId('inc'), title: 'Checkout 5xx', severity: 'low', source: 'manual' },
    idempotencyKey: newId('oev'),
  });

const billingOnly = (messages: SseMessage[]) => messages.filter((m) => m.event.startsWith('billing.'));

describe("billing's events on the event stream", () => {
  it("reach an admin's stream, live and replayed, and never a member's", async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const other = await svc.newTenant({ plan: 'plan_starter' });
    const admin = await openStream(t.admin);
    const member = await openStream(t.member);
    const otherAdmin = await openStream(other.admin);

    // An operator's plan change and credit grant (the CLI's path) write two billing events.
    expect(await operatorSetPlan(svc.database.db, t.tenantId, 'plan_pro')).toEqual({ from: 'plan_starter' });
    expect(await operatorGrantCredits(svc.database.db, t.tenantId, 'events_1000', new Date())).not.toBeNull();
    await marker(t.tenantId);
    await marker(other.tenantId);

    const seenByAdmin = await admin.until('incident.created');
    expect(billingOnly(seenByAdmin).map((m) => [m.event, m.data.payload])).toEqual([
      [
        'billing.plan_changed',
        { from: 'plan_starter', to: 'plan_pro', paymentId: null, actorType: 'system', actorId: 'operator' },
      ],
      [
        'billing.credits_purchased',
        {
          pack: 'events_1000',
          metric: 'events',
          units: 1000,
          period: expect.stringMatching(/^\d{4}-\d{2}$/),
          paymentId: null,
          amountUsd: 0,
          actorType: 'system',
          actorId: 'operator',
        },
      ],
    ]);
    const seenByMember = await member.until('incident.created');
    expect(seenByMember.map((m) => m.event)).toEqual(['incident.created']);
    // Another tenant's admin sees only its own tenant's events.
    expect((await otherAdmin.until('incident.created')).map((m) => m.event)).toEqual(['incident.created']);

    // A resume from before them replays the billing events to the admin only.
    const first = seenByAdmin[0]!.id;
    const replayedAdmin = await openStream(t.admin, String(Number(first) - 1));
    const replayedMember = await openStream(t.member, String(Number(first) - 1));
    expect(billingOnly(await replayedAdmin.until('incident.created')).map((m) => m.event)).toEqual([
      'billing.plan_changed',
      'billing.credits_purchased',
    ]);
    expect((await replayedMember.until('incident.created')).map((m) => m.event)).toEqual(['incident.created']);
    for (const s of [admin, member, otherAdmin, replayedAdmin, replayedMember]) s.close();
  });
});
