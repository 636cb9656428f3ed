import pino, { type Logger } from 'pino';

/**
 * JSON logs. Secrets, tokens and Authorization headers are redacted wherever they appear in a
 * logged object, as a second line of defence: code never logs them on purpose.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'combo-platform' },
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          '*.authorization',
          'secret_key',
          '*.secret_key',
          'secret',
          '*.secret',
          'order_token',
          '*.order_token',
          'token',
          '*.token',
          'adminToken',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
