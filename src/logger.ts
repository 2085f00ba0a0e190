import pino, { type Logger } from 'pino';
import { fieldsWithoutQueryParameters, withoutQueryParameters } from './db/query-errors.js';

/**
 * Structured JSON logs; credentials are redacted wherever they might appear, including the
 * parameters of a failed statement in any error logged (decision 225).
 */
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
    hooks: {
      logMethod(args, method) {
        const [first] = args as unknown[];
        if (first instanceof Error) withoutQueryParameters(first);
        else fieldsWithoutQueryParameters(first);
        return method.apply(this, args);
      },
    },
  });
}
