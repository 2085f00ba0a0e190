import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

describe('the logger', () => {
  it('redacts the secrets of sign-in and integration connections, top level and one level down', () => {
    const lines: string[] = [];
    const logger = createLogger('info', {}, { write: (line: string) => void lines.push(line) });
    logger.info(
      {
        accessToken: 'eyJhbGciOiJIUzI1NiJ9.payload.sig',
        refreshToken: 'frt_0123456789abcdefghijABCDEFGHIJ0123456789abc',
        provider: { clientSecret: 'gh-client-secret-123', codeVerifier: 'pkce-verifier-abc' },
        integration: { credentials: 'v1.iv.tag.ciphertext', provider: 'pagerduty' },
      },
      'connected',
    );
    const [line] = lines;
    for (const secret of ['eyJhbGci', 'frt_0123', 'gh-client-secret', 'pkce-verifier', 'v1.iv.tag'])
      expect(line).not.toContain(secret);
    expect(JSON.parse(line!)).toMatchObject({
      accessToken: '[redacted]',
      refreshToken: '[redacted]',
      provider: { clientSecret: '[redacted]', codeVerifier: '[redacted]' },
      integration: { credentials: '[redacted]', provider: 'pagerduty' },
    });
  });
});
