// Operator CLI: `npm run --silent cli -- <command>`. Reads the same configuration as the service.
import { parseArgs } from 'node:util';
import { roles, signToken, type Role } from './auth/tokens.js';
import { connectDatabase, runMigrations } from './db/client.js';
import { createTenant, findTenant } from './db/repositories/tenants.js';
import { planIds, type PlanId } from './domain/plans.js';
import { configOrExit } from './entry.js';
import { resolveDatabaseUrl, resolveJwtSecret } from './runtime.js';

const usage = `Usage:
  npm run --silent cli -- tenant create --name NAME [--plan ${planIds.join('|')}]
      Creates a tenant; prints one JSON line with tenantId, name, slug and plan.
  npm run --silent cli -- token --tenant TENANT_ID --role admin|member [--sub USER_ID] [--email EMAIL] [--ttl SECONDS]
      Prints a signed access token (HS256 with JWT_SECRET or the secret npm start generated).`;

class UsageError extends Error {}

function fail(message: string): never {
  throw new UsageError(message);
}

async function tenantCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { name: { type: 'string' }, plan: { type: 'string', default: 'plan_starter' } },
    strict: true,
  });
  const name = values.name?.trim();
  if (!name) fail('--name is required');
  if (name.length > 200) fail('--name must be at most 200 characters');
  if (!(planIds as readonly string[]).includes(values.plan)) fail(`--plan must be one of ${planIds.join(', ')}`);
  const config = configOrExit();
  const url = resolveDatabaseUrl(config);
  await runMigrations(url);
  const database = connectDatabase(url, { max: 1 });
  try {
    const tenant = await createTenant(database.db, { name, plan: values.plan as PlanId });
    process.stdout.write(
      `${JSON.stringify({ tenantId: tenant.id, name: tenant.name, slug: tenant.slug, plan: tenant.plan, createdAt: tenant.createdAt.toISOString() })}\n`,
    );
  } finally {
    await database.close();
  }
}

async function token(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      role: { type: 'string' },
      sub: { type: 'string' },
      email: { type: 'string' },
      ttl: { type: 'string' },
      'check-tenant': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.tenant) fail('--tenant is required');
  if (!values.role || !(roles as readonly string[]).includes(values.role)) fail('--role must be admin or member');
  const config = configOrExit();
  const ttl = values.ttl === undefined ? config.auth.tokenTtlSeconds : Number(values.ttl);
  // No longer than the api accepts (JWT_MAX_LIFETIME_SECONDS, decision 0248): a token we print is never refused for it.
  const maxTtl = config.auth.maxLifetimeSeconds;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > maxTtl) fail(`--ttl must be a whole number of seconds (1 to ${maxTtl}, JWT_MAX_LIFETIME_SECONDS)`);
  const secret = resolveJwtSecret(config);
  if (!secret) fail('tokens are signed with JWT_SECRET; only JWKS_URL is configured, so tokens come from the identity provider');
  if (values['check-tenant']) {
    const database = connectDatabase(resolveDatabaseUrl(config), { max: 1 });
    try {
      if (!(await findTenant(database.db, values.tenant))) fail(`no tenant ${values.tenant}`);
    } finally {
      await database.close();
    }
  }
  const sub = values.sub ?? `cli-${values.role}`;
  process.stdout.write(
    `${signToken({ secret, tenantId: values.tenant, role: values.role as Role, sub, ...(values.email ? { email: values.email } : {}), ttlSeconds: ttl })}\n`,
  );
}

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  if (command === 'tenant' && sub === 'create') return tenantCreate(rest);
  if (command === 'token') return token(argv.slice(1));
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  fail(command ? `unknown command: ${[command, sub].filter(Boolean).join(' ')}` : 'no command given');
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`error: ${(err as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
