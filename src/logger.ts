import pino, { type DestinationStream, type Logger } from 'pino';
import { fieldsWithoutQueryParameters, withoutQueryParameters } from './db/query-errors.js';

/**
 * Structured JSON logs with level names (`"level":"info"`, what log tools and people read; ADR
 * 0281); credentials are redacted wherever they might appear, including the parameters of a
 * failed statement in any error logged.
 */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  destination?: DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'incident-service', ...base },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // The Temporal SDK logs an activity's failure as `error`: with its message and stack, as `err`.
    serializers: { error: pino.stdSerializers.err },
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'headers.authorization',
        '*.headers.authorization',
        'token',
        '*.token',
        'password',
        '*.password',
        'secret',
        '*.secret',
        'jwtSecret',
        '*.jwtSecret',
        'apiKey',
        '*.apiKey',
        'signingSecret',
        '*.signingSecret',
        'databaseUrl',
        '*.databaseUrl',
        // Sign-in and integration connections (issue 38).
        'accessToken',
        '*.accessToken',
        'refreshToken',
        '*.refreshToken',
        'clientSecret',
        '*.clientSecret',
        'codeVerifier',
        '*.codeVerifier',
        'credentials',
        '*.credentials',
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
  };
  return destination ? pino(options, destination) : pino(options);
}
