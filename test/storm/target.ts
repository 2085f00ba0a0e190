/** Storm targets: a running service reached over HTTP, its tenants made in its database. */
import postgres from 'postgres';
import { signToken } from '../../src/auth/tokens.js';
import { connectDatabase } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import type { StormTarget } from './replay.js';

const BIG = 1_000_000_000;

/** A target over the service's database and JWT secret: tenants are made as the CLI makes them. */
export function targetOver(baseUrl: string, databaseUrl: string, jwtSecret: string) {
  const database = connectDatabase(databaseUrl, { max: 2 });
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => undefined });
  const token = (tenantId: string, role: 'admin' | 'member', sub: string) =>
    signToken({ secret: jwtSecret, tenantId, role, sub, ttlSeconds: 4 * 3600 });
  const target: StormTarget = {
    baseUrl,
    sql,
    async newTenant(label) {
      const tenant = await createTenant(database.db, {
        name: `${label} ${Date.now().toString(36)}`,
        plan: 'plan_enterprise',
        settings: {
          quotas: { investigationsPerMonth: BIG, eventsPerMonth: BIG, chatMessagesPerMonth: BIG },
          rateLimitPerMinute: 1_000_000,
        },
      });
      return {
        tenantId: tenant.id,
        admins: [token(tenant.id, 'admin', 'storm-admin-1'), token(tenant.id, 'admin', 'storm-admin-2')],
        member: token(tenant.id, 'member', 'storm-member'),
      };
    },
  };
  return {
    target,
    close: async () => {
      await sql.end();
      await database.close();
    },
  };
}
