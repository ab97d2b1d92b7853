import { Cluster, Redis, type ChainableCommander, type RedisOptions } from 'ioredis';
import type { Logger } from './logger.js';
import type { RedisTarget } from './redis-target.js';

/** A connection to one Redis server or to a Redis Cluster: both speak the same commands. */
export type RedisClient = Redis | Cluster;

/**
 * What a connection is for:
 * - `commands` (web and worker commands, queue producers): fail fast while Redis is away instead of
 *   queueing. Nothing the API sends to Redis is needed for correctness (state lives in Postgres), so
 *   waiting for Redis would only turn its outage into an API outage.
 * - `subscriber`: queues its SUBSCRIBE until connected; ioredis re-subscribes after reconnects.
 * - `blocking` (BullMQ workers): blocking commands without a retry limit, as BullMQ requires.
 */
export type RedisUse = 'commands' | 'subscriber' | 'blocking';

/**
 * Every Redis connection of the service is made here, for one server or a cluster alike. On a
 * cluster, ioredis follows MOVED and ASK redirections and refreshes its slot map after a failover,
 * retrying what the failover interrupted; the keys one Lua script or MULTI touches must share a
 * hash slot (see ExpiringSlots and queuePrefix).
 */
export function createRedis(target: RedisTarget, use: RedisUse, role: string, logger: Logger, extra: RedisOptions = {}): RedisClient {
  const failFast = use === 'commands';
  const options: RedisOptions = {
    connectionName: `approval-gate:${role}`,
    maxRetriesPerRequest: failFast ? 1 : null,
    ...extra,
  };
  const connection =
    target.kind === 'server'
      ? new Redis(target.url, { enableOfflineQueue: !failFast, ...options })
      : new Cluster(target.nodes, {
          // Offline means no slot map yet: at start, or with every node unreachable.
          enableOfflineQueue: !failFast,
          redisOptions: {
            ...options,
            ...(target.username ? { username: target.username } : {}),
            ...(target.password ? { password: target.password } : {}),
            ...(target.tls ? { tls: {} } : {}),
          },
        });
  // ioredis reconnects by itself; an unhandled 'error' event would only print noise.
  connection.on('error', (error: Error) => logger.warn({ err: error, role }, 'redis connection error'));
  return connection;
}

/**
 * Subscribes to a channel (or a pattern), waiting at most `timeoutMs`: a web process must come up
 * while Redis is away. The SUBSCRIBE stays queued and ioredis re-subscribes by itself after every
 * reconnect.
 */
export async function subscribeWithin(
  subscriber: RedisClient,
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
export async function closeRedis(connection: RedisClient): Promise<void> {
  if (connection.status === 'ready') {
    await connection.quit().catch(() => connection.disconnect());
  } else {
    connection.disconnect();
  }
}

/**
 * Runs a pipeline and fails if any of its commands failed: ioredis answers a pipeline with each
 * command's error beside its result and does not reject, so a PUBLISH refused during a failover
 * was taken for sent.
 */
export async function execPipeline(pipeline: ChainableCommander): Promise<void> {
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error !== null);
  if (failed) throw failed[0];
}
