import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { embeddedDatabaseUrl } from './db/embedded.js';

export const EMBEDDED_DATABASE = 'incidents';

export function jwtSecretFile(dataDir: string): string {
  return path.join(dataDir, 'jwt-secret');
}

/** The JWT secret `npm start` generates into its data folder when JWT_SECRET is unset. */
export function ensureGeneratedJwtSecret(dataDir: string): string {
  const file = jwtSecretFile(dataDir);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

export interface RuntimeSettings {
  databaseUrl: string;
  temporalAddress: string;
  jwtSecret: string | undefined;
}

export function resolveDatabaseUrl(config: Config): string {
  const url = config.databaseUrl ?? embeddedDatabaseUrl(config.dataDir, config.pgPort, EMBEDDED_DATABASE);
  if (!url) {
    throw new Error(`DATABASE_URL: not set, and no embedded PostgreSQL was found in ${config.dataDir} (run npm start first)`);
  }
  return url;
}

export function resolveJwtSecret(config: Config): string | undefined {
  const file = jwtSecretFile(config.dataDir);
  const secret = config.auth.jwtSecret ?? (existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined);
  if (!secret && !config.auth.jwksUrl) {
    throw new Error(`JWT_SECRET: not set, and no generated secret was found in ${config.dataDir} (run npm start first)`);
  }
  return secret;
}

/**
 * Fills what the environment leaves unset with what `npm start` uses (its embedded PostgreSQL,
 * its Temporal dev server, its generated secret), so the api, the worker and the CLI run in a
 * second terminal beside it with no configuration.
 */
export function resolveRuntimeSettings(config: Config): RuntimeSettings {
  return {
    databaseUrl: resolveDatabaseUrl(config),
    temporalAddress: config.temporal.address ?? `127.0.0.1:${config.temporal.port}`,
    jwtSecret: resolveJwtSecret(config),
  };
}
