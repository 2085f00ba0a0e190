import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { embeddedDatabaseUrl } from './db/embedded.js';
import { SKILL_KEY_BYTES } from './skills/crypto.js';

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

export function skillKeyFile(dataDir: string): string {
  return path.join(dataDir, 'skill-encryption-key');
}

/** The skill header encryption key `npm start` generates when SKILL_ENCRYPTION_KEY is unset. */
export function ensureGeneratedSkillEncryptionKey(dataDir: string): Buffer {
  const file = skillKeyFile(dataDir);
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${randomBytes(SKILL_KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return readSkillKeyFile(file);
}

function readSkillKeyFile(file: string): Buffer {
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== SKILL_KEY_BYTES) throw new Error(`${file}: not a ${SKILL_KEY_BYTES}-byte base64 key`);
  return key;
}

/**
 * SKILL_ENCRYPTION_KEY, else the key `npm start` generated. Never generated here: the api and the
 * worker must share one key (a second, different key would make stored header values unreadable).
 */
export function resolveSkillEncryptionKey(config: Config): Buffer {
  if (config.skills.encryptionKey) return config.skills.encryptionKey;
  const file = skillKeyFile(config.dataDir);
  if (!existsSync(file)) {
    throw new Error(
      `SKILL_ENCRYPTION_KEY: not set, and no generated key was found in ${config.dataDir} (run npm start first, or set it: openssl rand -base64 32)`,
    );
  }
  return readSkillKeyFile(file);
}

export interface RuntimeSettings {
  databaseUrl: string;
  temporalAddress: string;
  jwtSecret: string | undefined;
  /** AES-256-GCM key for skill header values, shared by the api and the worker. */
  skillEncryptionKey: Buffer;
}

export function resolveDatabaseUrl(config: Config): string {
  const url = config.databaseUrl ?? embeddedDatabaseUrl(config.dataDir, config.pgPort, EMBEDDED_DATABASE);
  if (!url) {
    throw new Error(
      `DATABASE_URL: not set, and no embedded PostgreSQL was found in ${config.dataDir} (run npm start first)`,
    );
  }
  return url;
}

export function resolveJwtSecret(config: Config): string | undefined {
  const file = jwtSecretFile(config.dataDir);
  const secret = config.auth.jwtSecret ?? (existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined);
  if (!secret && !config.auth.jwksUrl) {
    throw new Error(
      `JWT_SECRET: not set, and no generated secret was found in ${config.dataDir} (run npm start first)`,
    );
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
    skillEncryptionKey: resolveSkillEncryptionKey(config),
  };
}
