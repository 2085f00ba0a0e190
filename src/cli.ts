// Operator CLI: `npm run --silent cli -- <command>`. Reads the same configuration as the service.
import { parseArgs } from 'node:util';
import { roles, signToken, type Role } from './auth/tokens.js';
import { oneLine } from './api/schemas/common.js';
import { emailAddress } from './domain/email.js';
import { connectDatabase, runMigrations } from './db/client.js';
import { addMemberByOperator, listAllMembers } from './db/repositories/members.js';
import { createTenant, findTenant, setCustomQuotas } from './db/repositories/tenants.js';
import { memberRoles, type MemberRole } from './db/schema/identity.js';
import type { TenantSettings } from './db/schema/tenants.js';
import {
  creditPackIds,
  enterpriseQuotaDefaults,
  MAX_CUSTOM_QUOTA,
  monthlyQuotas,
  planIds,
  type CreditPackId,
  type PlanId,
} from './domain/plans.js';
import { operatorGrantCredits, operatorSetPlan } from './billing/operator.js';
import { configOrExit } from './process-exit.js';
import { resolveDatabaseUrl, resolveJwtSecret } from './runtime-settings.js';

const usage = `Usage:
  npm run --silent cli -- tenant create --name NAME [--plan ${planIds.join('|')}]
      [--investigations-per-month N] [--events-per-month N] [--chat-messages-per-month N]
      Creates a tenant; prints one JSON line with tenantId, name, slug, plan and quotas. The
      quota flags are for plan_enterprise only; unset, they are ${enterpriseQuotaDefaults.investigationsPerMonth}, ${enterpriseQuotaDefaults.eventsPerMonth} and ${enterpriseQuotaDefaults.chatMessagesPerMonth} a month.
  npm run --silent cli -- tenant quotas --tenant TENANT_ID [--investigations N] [--events N] [--chat-messages N]
      Sets an enterprise tenant's monthly quotas (those named; 0 to ${MAX_CUSTOM_QUOTA}); prints them all.
  npm run --silent cli -- tenant plan --tenant TENANT_ID --plan ${planIds.join('|')}
      Moves the tenant to the plan at once (quotas and rate limit follow); audited. For a service
      without a payment provider (no STRIPE_SECRET_KEY); prints tenantId, from, plan and quotas.
  npm run --silent cli -- tenant credits --tenant TENANT_ID --pack ${creditPackIds.join('|')}
      Adds a credit pack to the tenant's current month (used after the plan's quota); audited.
      Prints tenantId, period and the credits left.
  npm run --silent cli -- token --tenant TENANT_ID --role admin|member [--sub USER_ID] [--email EMAIL] [--ttl SECONDS]
      Prints a signed access token (HS256 with JWT_SECRET or the secret npm start generated).
  npm run --silent cli -- member add --tenant TENANT_ID --email EMAIL --role admin|member [--name NAME]
      Makes (or reuses) the user account of EMAIL and its membership of the tenant with the role (a
      tenant's first admin); prints one JSON line with userId, tenantId, email and role. They sign in
      with a provider whose verified email is EMAIL. An existing member takes the role, unless that
      would leave the tenant without an admin.
  npm run --silent cli -- member list --tenant TENANT_ID
      Prints the tenant's members, one JSON line each (userId, email, name, role, joinedAt).`;

class UsageError extends Error {}

function fail(message: string): never {
  throw new UsageError(message);
}

type Quotas = NonNullable<TenantSettings['quotas']>;

/** The quota flags given (flag name → setting), each a whole number from 0 to MAX_CUSTOM_QUOTA. */
function quotaFlags(values: Record<string, unknown>, flags: Record<string, keyof Quotas>): Quotas {
  const quotas: Quotas = {};
  for (const [flag, key] of Object.entries(flags)) {
    const value = values[flag];
    if (value === undefined) continue;
    const n = Number(value);
    if (!/^\d+$/.test(String(value)) || n > MAX_CUSTOM_QUOTA)
      fail(`--${flag} must be a whole number from 0 to ${MAX_CUSTOM_QUOTA}`);
    quotas[key] = n;
  }
  return quotas;
}

async function withDatabase<T>(run: (db: ReturnType<typeof connectDatabase>['db']) => Promise<T>): Promise<T> {
  const url = resolveDatabaseUrl(configOrExit());
  await runMigrations(url);
  const database = connectDatabase(url, { max: 1 });
  try {
    return await run(database.db);
  } finally {
    await database.close();
  }
}

const createQuotaFlags = {
  'investigations-per-month': 'investigationsPerMonth',
  'events-per-month': 'eventsPerMonth',
  'chat-messages-per-month': 'chatMessagesPerMonth',
} as const;
const updateQuotaFlags = {
  investigations: 'investigationsPerMonth',
  events: 'eventsPerMonth',
  'chat-messages': 'chatMessagesPerMonth',
} as const;
const stringOptions = (flags: object) =>
  Object.fromEntries(Object.keys(flags).map((flag) => [flag, { type: 'string' as const }]));

async function tenantCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      plan: { type: 'string', default: 'plan_starter' },
      ...stringOptions(createQuotaFlags),
    },
    strict: true,
  });
  const name = values.name?.trim();
  if (!name) fail('--name is required');
  if (name.length > 200) fail('--name must be at most 200 characters');
  const plan = values.plan as string;
  if (!(planIds as readonly string[]).includes(plan)) fail(`--plan must be one of ${planIds.join(', ')}`);
  const quotas = quotaFlags(values, createQuotaFlags);
  if (Object.keys(quotas).length > 0 && plan !== 'plan_enterprise')
    fail('the quota flags are for plan_enterprise; other plans have their published quotas');
  const tenant = await withDatabase((db) =>
    createTenant(db, {
      name,
      plan: plan as PlanId,
      ...(Object.keys(quotas).length > 0 ? { settings: { quotas } } : {}),
    }),
  );
  process.stdout.write(
    `${JSON.stringify({ tenantId: tenant.id, name: tenant.name, slug: tenant.slug, plan: tenant.plan, quotas: monthlyQuotas(tenant), createdAt: tenant.createdAt.toISOString() })}\n`,
  );
}

async function tenantQuotas(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string' }, ...stringOptions(updateQuotaFlags) },
    strict: true,
  });
  if (!values.tenant) fail('--tenant is required');
  const quotas = quotaFlags(values, updateQuotaFlags);
  if (Object.keys(quotas).length === 0) fail('name at least one of --investigations, --events, --chat-messages');
  const tenantId = values.tenant;
  const tenant = await withDatabase(async (db) => {
    const found = await findTenant(db, tenantId);
    if (!found) throw new Error(`no tenant ${tenantId}`);
    if (found.plan !== 'plan_enterprise')
      throw new Error(`tenant ${tenantId} is on ${found.plan}: custom quotas are for plan_enterprise`);
    return (await setCustomQuotas(db, tenantId, quotas))!;
  });
  process.stdout.write(
    `${JSON.stringify({ tenantId: tenant.id, plan: tenant.plan, quotas: monthlyQuotas(tenant) })}\n`,
  );
}

async function tenantPlan(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string' }, plan: { type: 'string' } },
    strict: true,
  });
  if (!values.tenant) fail('--tenant is required');
  const plan = values.plan ?? '';
  if (!(planIds as readonly string[]).includes(plan)) fail(`--plan must be one of ${planIds.join(', ')}`);
  const tenantId = values.tenant;
  const changed = await withDatabase(async (db) => {
    const moved = await operatorSetPlan(db, tenantId, plan as PlanId);
    return moved && { ...moved, tenant: (await findTenant(db, tenantId))! };
  });
  if (!changed) fail(`no tenant ${tenantId}`);
  process.stdout.write(
    `${JSON.stringify({ tenantId, from: changed.from, plan: changed.tenant.plan, quotas: monthlyQuotas(changed.tenant) })}\n`,
  );
}

async function tenantCredits(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string' }, pack: { type: 'string' } },
    strict: true,
  });
  if (!values.tenant) fail('--tenant is required');
  const pack = values.pack ?? '';
  if (!(creditPackIds as readonly string[]).includes(pack)) fail(`--pack must be one of ${creditPackIds.join(', ')}`);
  const tenantId = values.tenant;
  const granted = await withDatabase((db) => operatorGrantCredits(db, tenantId, pack as CreditPackId, new Date()));
  if (!granted) fail(`no tenant ${tenantId}`);
  process.stdout.write(`${JSON.stringify({ tenantId, ...granted })}\n`);
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
  // No longer than the api accepts (JWT_MAX_LIFETIME_SECONDS): a token we print is never refused for it.
  const maxTtl = config.auth.maxLifetimeSeconds;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > maxTtl)
    fail(`--ttl must be a whole number of seconds (1 to ${maxTtl}, JWT_MAX_LIFETIME_SECONDS)`);
  const secret = resolveJwtSecret(config);
  if (!secret)
    fail('tokens are signed with JWT_SECRET; only JWKS_URL is configured, so tokens come from the identity provider');
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

async function memberAdd(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      name: { type: 'string' },
    },
    strict: true,
  });
  if (!values.tenant) fail('--tenant is required');
  const email = emailAddress.safeParse(values.email ?? '');
  if (!email.success) fail('--email must be an email address (at most 254 characters)');
  if (!values.role || !(memberRoles as readonly string[]).includes(values.role)) fail('--role must be admin or member');
  const named = values.name === undefined ? undefined : oneLine(200).safeParse(values.name);
  if (named && !named.success) fail('--name must be one line of 1 to 200 characters');
  const name = named?.data;
  const tenantId = values.tenant;
  const role = values.role as MemberRole;
  const added = await withDatabase((db) =>
    addMemberByOperator(db, { tenantId, email: email.data, role, ...(name ? { name } : {}), now: new Date() }),
  );
  if (added === null) fail(`no tenant ${tenantId}`);
  if (added === 'last_admin')
    throw new Error(`${email.data} is the last admin of ${tenantId}; make another member admin first`);
  process.stdout.write(`${JSON.stringify({ userId: added.userId, tenantId, email: email.data, role })}\n`);
}

async function memberList(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tenant: { type: 'string' } }, strict: true });
  if (!values.tenant) fail('--tenant is required');
  const tenantId = values.tenant;
  const members = await withDatabase(async (db) => {
    if (!(await findTenant(db, tenantId))) return null;
    return listAllMembers(db, tenantId);
  });
  if (!members) fail(`no tenant ${tenantId}`);
  for (const m of members) {
    process.stdout.write(
      `${JSON.stringify({ userId: m.userId, email: m.email, name: m.name, role: m.role, joinedAt: m.joinedAt.toISOString() })}\n`,
    );
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  if (command === 'tenant' && sub === 'create') return tenantCreate(rest);
  if (command === 'tenant' && sub === 'quotas') return tenantQuotas(rest);
  if (command === 'tenant' && sub === 'plan') return tenantPlan(rest);
  if (command === 'tenant' && sub === 'credits') return tenantCredits(rest);
  if (command === 'token') return token(argv.slice(1));
  if (command === 'member' && sub === 'add') return memberAdd(rest);
  if (command === 'member' && sub === 'list') return memberList(rest);
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
