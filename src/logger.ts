import pino, { type Logger } from 'pino';

/** Structured JSON logs; credentials are redacted wherever they might appear. */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'incident-service', ...base },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
        'token', '*.token', 'password', '*.password', 'secret', '*.secret', 'jwtSecret', '*.jwtSecret',
        'apiKey', '*.apiKey', 'signingSecret', '*.signingSecret', 'databaseUrl', '*.databaseUrl',
      ],
      censor: '[redacted]',
    },
  });
}
