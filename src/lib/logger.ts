import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config.js';

export type { Logger };

/** Structured JSON logs; credentials are redacted wherever they might appear. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level: config.LOG_LEVEL,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["x-api-key"]',
          '*.key',
          '*.secret',
          '*.apiKey',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
