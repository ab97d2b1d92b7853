import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

function withErrorLogging(connection: Redis, logger: Logger, role: string): Redis {
  // ioredis reconnects by itself; an unhandled 'error' event would only print noise.
  connection.on('error', (error: Error) => logger.warn({ err: error, role }, 'redis connection error'));
  return connection;
}

/**
 * Connections for the web process. Commands fail fast while Redis is away instead of queueing:
 * nothing the API sends to Redis is needed for correctness (state lives in Postgres), so waiting
 * for Redis would only turn its outage into an API outage.
 */
export function createRedisConnection(url: string, role: string, logger: Logger): Redis {
  const connection = new Redis(url, { connectionName: `approval-gate:${role}`, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  return withErrorLogging(connection, logger, role);
}

/** A subscriber must queue its SUBSCRIBE until connected, and ioredis re-subscribes after reconnects. */
export function createRedisSubscriber(url: string, role: string, logger: Logger): Redis {
  const connection = new Redis(url, { connectionName: `approval-gate:${role}`, maxRetriesPerRequest: null });
  return withErrorLogging(connection, logger, role);
}

/**
 * Subscribes to a channel (or a pattern), waiting at most `timeoutMs`: a web process must come up while Redis is away. The
 * SUBSCRIBE stays queued and ioredis re-subscribes by itself after every reconnect.
 */
export async function subscribeWithin(
  subscriber: Redis,
  channel: string,
  timeoutMs: number,
  logger: Logger,
  kind: 'channel' | 'pattern' = 'channel',
): Promise<boolean> {
  const subscribed = (kind === 'pattern' ? subscriber.psubscribe(channel) : subscriber.subscribe(channel)).then(
    () => true,
    (error: unknown) => {
      logger.error({ err: error, channel }, 'could not subscribe');
      return false;
    },
  );
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(resolve, timeoutMs, false)));
  const done = await Promise.race([subscribed, timedOut]);
  clearTimeout(timer);
  return done;
}

/** QUIT when connected (lets replies drain), otherwise just stop reconnecting. */
export async function closeRedis(connection: Redis): Promise<void> {
  if (connection.status === 'ready') {
    await connection.quit().catch(() => connection.disconnect());
  } else {
    connection.disconnect();
  }
}
