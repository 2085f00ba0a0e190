import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  ensureGeneratedSkillEncryptionKey,
  resolveSkillEncryptionKey,
  skillKeyFile,
} from '../../src/runtime-settings.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { blockedReason, NetworkAllowlist, refusalReason } from '../../src/skills/networks.js';

describe('SKILL_ENCRYPTION_KEY and SKILL_ALLOWED_NETWORKS', () => {
  it('reads a 32-byte base64 key and a list of addresses and CIDR ranges', () => {
    const key = Buffer.alloc(32, 3);
    const config = loadConfig({
      SKILL_ENCRYPTION_KEY: key.toString('base64'),
      SKILL_ALLOWED_NETWORKS: '127.0.0.1/32, 10.20.0.0/16,fd00::/8',
    });
    expect(config.skills.encryptionKey).toEqual(key);
    expect(config.skills.allowedNetworks).toEqual(['127.0.0.1/32', '10.20.0.0/16', 'fd00::/8']);
    expect(loadConfig({}).skills).toEqual({ encryptionKey: undefined, allowedNetworks: [] });
  });

  it.each([
    [{ SKILL_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') }, 'SKILL_ENCRYPTION_KEY'],
    [{ SKILL_ENCRYPTION_KEY: 'not base64 at all!' }, 'SKILL_ENCRYPTION_KEY'],
    [{ SKILL_ALLOWED_NETWORKS: 'internal.example.com' }, 'SKILL_ALLOWED_NETWORKS'],
    [{ SKILL_ALLOWED_NETWORKS: '10.0.0.0/33' }, 'SKILL_ALLOWED_NETWORKS'],
  ])('rejects %j naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(variable));
  });

  it('npm start generates the key once into DATA_DIR (mode 600); the api and worker read it, never generate it', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'skill-key-'));
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(() => resolveSkillEncryptionKey(config)).toThrow(/SKILL_ENCRYPTION_KEY: not set, and no generated key/);
    const generated = ensureGeneratedSkillEncryptionKey(dataDir);
    expect(generated).toHaveLength(32);
    expect(statSync(skillKeyFile(dataDir)).mode & 0o777).toBe(0o600);
    expect(ensureGeneratedSkillEncryptionKey(dataDir)).toEqual(generated);
    expect(resolveSkillEncryptionKey(config)).toEqual(generated);
    const configured = Buffer.alloc(32, 5);
    expect(
      resolveSkillEncryptionKey(loadConfig({ DATA_DIR: dataDir, SKILL_ENCRYPTION_KEY: configured.toString('base64') })),
    ).toEqual(configured);
    writeFileSync(skillKeyFile(dataDir), 'c2hvcnQ=\n');
    expect(() => resolveSkillEncryptionKey(config)).toThrow(/not a 32-byte base64 key/);
    expect(readFileSync(skillKeyFile(dataDir), 'utf8')).toBe('c2hvcnQ=\n');
  });
});

describe('header value encryption', () => {
  const cipher = createSkillCipher(Buffer.alloc(32, 1));
  const context = { tenantId: 'ten_a', skillId: 'skl_a', header: 'Authorization' };

  it('AES-256-GCM with a fresh IV per value: the same value seals differently and opens only in its context', () => {
    const one = cipher.encrypt('Bearer abc', context);
    const two = cipher.encrypt('Bearer abc', context);
    expect(one).not.toBe(two);
    const [version, iv, tag] = one.split('.');
    expect(version).toBe('v1');
    expect(Buffer.from(iv!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(tag!, 'base64url')).toHaveLength(16);
    expect(one).not.toContain('abc');
    expect(cipher.decrypt(one, context)).toBe('Bearer abc');
    expect(cipher.decrypt(one, { ...context, header: 'authorization' })).toBe('Bearer abc'); // names are case-insensitive
    expect(() => cipher.decrypt(one, { ...context, skillId: 'skl_b' })).toThrow(/cannot be decrypted/);
    expect(() => cipher.decrypt(one, { ...context, tenantId: 'ten_b' })).toThrow(/cannot be decrypted/);
    expect(() => cipher.decrypt(one, { ...context, header: 'X-Api-Key' })).toThrow(/cannot be decrypted/);
    expect(() => createSkillCipher(Buffer.alloc(32, 2)).decrypt(one, context)).toThrow(/cannot be decrypted/);
    // One bit of the ciphertext flipped. Rewriting its last base64url characters could leave
    // the bytes as they were (the last character of a 10-byte value carries 2 bits of data).
    const parts = one.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    const tampered = [...parts.slice(0, 3), body.toString('base64url')].join('.');
    expect(tampered).not.toBe(one);
    expect(() => cipher.decrypt(tampered, context)).toThrow(/cannot be decrypted/);
    expect(() => cipher.decrypt('plain', context)).toThrow(/not in a known format/);
    expect(() => createSkillCipher(Buffer.alloc(16))).toThrow(/32 bytes/);
  });
});

describe('address rules', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified ("this network")'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'unique local (private)'],
    ['fd12:3456::1', 'unique local (private)'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local (cloud metadata)'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::192.168.1.1', 'private'],
    ['224.0.0.1', 'multicast'],
  ])('%s is refused as %s', (address, reason) => {
    expect(blockedReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(blockedReason(address)).toBeUndefined();
    },
  );

  it('lets the allowlist open exact addresses and ranges, also in their IPv4-mapped form', () => {
    const allowlist = new NetworkAllowlist(['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32']);
    expect(refusalReason('127.0.0.1', allowlist)).toBeUndefined();
    expect(refusalReason('::ffff:127.0.0.1', allowlist)).toBeUndefined();
    expect(refusalReason('127.0.0.2', allowlist)).toBe('loopback');
    expect(refusalReason('10.20.9.9', allowlist)).toBeUndefined();
    expect(refusalReason('10.21.0.1', allowlist)).toBe('private');
    expect(refusalReason('fd00:1::5', allowlist)).toBeUndefined();
    expect(refusalReason('fd00:2::5', allowlist)).toBe('unique local (private)');
    expect(refusalReason('169.254.169.254', allowlist)).toBe('link-local (cloud metadata)');
    expect(() => new NetworkAllowlist(['example.com'])).toThrow(/not an IP address/);
  });
});
