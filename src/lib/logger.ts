import { createRequire } from 'node:module';
import { pino, type DestinationStream, type LevelWithSilent, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs; credentials are redacted wherever they might appear. In development on a
 * terminal the lines are pretty-printed instead, one readable line per event.
 */
export function createLogger(
  config: { LOG_LEVEL: LevelWithSilent; NODE_ENV: string },
  name: string,
  destination?: DestinationStream,
): Logger {
  return pino(
    {
      name,
      level: config.LOG_LEVEL,
      redact: { paths: ['*.key', '*.secret', '*.apiKey', '*.password'], censor: '[redacted]' },
    },
    destination ?? (config.NODE_ENV === 'development' && process.stdout.isTTY ? prettyStream() : undefined),
  );
}

/**
 * pino-pretty, synchronous so that a crash loses no line. It is a development dependency, loaded
 * only here: a production install without it keeps JSON.
 */
function prettyStream(): DestinationStream | undefined {
  let pretty: typeof import('pino-pretty');
  try {
    pretty = createRequire(import.meta.url)('pino-pretty') as typeof pretty;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
  // A request line's message already says what its req, res and responseTime hold.
  return pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,req,res,responseTime' });
}
