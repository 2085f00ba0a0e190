/**
 * The floor for `npm run bench:ingest`: a Hono app on @hono/node-server, as the api is, whose
 * webhook route only parses the JSON body, checks one field and answers 202 with an
 * ingestion-shaped body. No key, no database: what one HTTP round trip of the load generator
 * costs on this machine, to set the ingestion rate and the raw insert rate beside.
 * With FLOOR_ACCEPTED_KEY (bench:abuse), a request with any other key is answered 401 at once and
 * its connection closed, its body unread, as the api answers a refused key; `/health` answers too.
 * Prints `listening <port>` once it accepts connections.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
let count = 0;
const acceptedKey = process.env.FLOOR_ACCEPTED_KEY;
app.get('/health', (c) => c.json({ status: 'ok' }));
app.post('/v1/webhooks/:tenantId/:provider', async (c) => {
  if (acceptedKey && c.req.header('authorization') !== `Bearer ${acceptedKey}`) {
    c.header('Connection', 'close');
    return c.json({ error: 'unauthorized', message: 'The API key is invalid, revoked, or not for this tenant' }, 401);
  }
  const body = (await c.req.json()) as { name?: unknown };
  if (typeof body.name !== 'string') return c.json({ error: 'validation_error', message: 'name is required' }, 400);
  count++;
  return c.json({ eventIds: [`evt_${count}`], incidentIds: ['inc_floor'], deduplicated: count > 1 }, 202);
});
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
  process.stdout.write(`listening ${info.port}\n`),
);
process.once('SIGTERM', () => server.close(() => process.exit(0)));
