/**
 * Skill header values at rest: AES-256-GCM, a random 12-byte IV per value, the 16-byte tag kept
 * with it, and the tenant, skill and header name as additional authenticated data, so a stored
 * value cannot be moved to another skill or header. Format: `v1.<iv>.<tag>.<ciphertext>`
 * (base64url); the version leaves room for key rotation.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export interface SecretContext {
  tenantId: string;
  skillId: string;
  header: string;
}

export interface SkillCipher {
  encrypt(plaintext: string, context: SecretContext): string;
  decrypt(sealed: string, context: SecretContext): string;
}

export const SKILL_KEY_BYTES = 32;

function additionalData(context: SecretContext): Buffer {
  // Header names are case-insensitive; the tenant and skill ids contain no NUL.
  return Buffer.from(`${context.tenantId}\0${context.skillId}\0${context.header.toLowerCase()}`, 'utf8');
}

export function createSkillCipher(key: Buffer): SkillCipher {
  if (key.length !== SKILL_KEY_BYTES) throw new Error(`the skill encryption key must be ${SKILL_KEY_BYTES} bytes`);
  const secretKey = Buffer.from(key); // a private copy
  return {
    encrypt(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', secretKey, iv, { authTagLength: 16 });
      cipher.setAAD(additionalData(context));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return ['v1', iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.');
    },
    decrypt(sealed, context) {
      const [version, iv, tag, ciphertext, ...rest] = sealed.split('.');
      if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined || rest.length > 0) {
        throw new Error('a stored skill header value is not in a known format');
      }
      const decipher = createDecipheriv('aes-256-gcm', secretKey, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
      decipher.setAAD(additionalData(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      try {
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString(
          'utf8',
        );
      } catch {
        throw new Error('a stored skill header value cannot be decrypted (was SKILL_ENCRYPTION_KEY changed?)');
      }
    },
  };
}
