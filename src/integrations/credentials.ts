/**
 * An integration's credentials at rest: one JSON document sealed with the skill key
 * (AES-256-GCM), the tenant, the integration id and the provider bound in as additional
 * authenticated data, so a sealed value copied to another tenant's or integration's row does
 * not open.
 */
import type { SkillCipher } from '../skills/crypto.js';

export interface OAuthCredentials {
  kind: 'oauth2';
  accessToken: string;
  refreshToken?: string;
  tokenType?: string;
  /** Zendesk's subdomain: where the tokens and the API are. */
  subdomain?: string;
  /** What the provider said beside the tokens that actions need (Slack's team, Discord's webhook). */
  extra?: Record<string, string>;
}

export interface ApiKeyCredentials {
  kind: 'api_key';
  fields: Record<string, string>;
}

export type Credentials = OAuthCredentials | ApiKeyCredentials;

interface Owner {
  tenantId: string;
  id: string;
  provider: string;
}

const contextOf = (owner: Owner) => ({
  tenantId: owner.tenantId,
  skillId: owner.id,
  header: `integration:${owner.provider}`,
});

export function sealCredentials(cipher: SkillCipher, owner: Owner, credentials: Credentials): string {
  return cipher.encrypt(JSON.stringify(credentials), contextOf(owner));
}

/** Throws when the value does not open for this owner (moved, or the key changed). */
export function openCredentials(cipher: SkillCipher, owner: Owner, sealed: string): Credentials {
  return JSON.parse(cipher.decrypt(sealed, contextOf(owner))) as Credentials;
}
