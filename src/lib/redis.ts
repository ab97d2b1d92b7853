import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';
import type { Logger } from './logger.js';

/** A connection to one Redis server or to a Redis Cluster: both speak the same commands. */
export type RedisClient = Redis | Cluster;

export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Where Redis is, from `REDIS_URL`: one server (`redis://` or `rediss://`), or a cluster named by
 * some of its nodes (`redis+cluster://[user:password@]host:port,host:port`, or `rediss+cluster://`
 * with TLS); the other nodes are found from those. `url` is the variable as it was given.
 */
export type RedisTarget =
  | { kind: 'server'; url: string }
  | { kind: 'cluster'; url: string; nodes: RedisNode[]; username?: string; password?: string; tls: boolean };

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#@]+)\/?$/;
const NODE = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export const redisTargetSchema = z.string().transform((url, context): RedisTarget => {
  const cluster = CLUSTER_URL.exec(url);
  if (!cluster) {
    if (z.url({ protocol: /^rediss?$/ }).safeParse(url).success) return { kind: 'server', url };
    context.addIssue({
      code: 'custom',
      message: 'REDIS_URL must be redis://host:port (one server) or redis+cluster://host:port,host:port (a cluster)',
    });
    return z.NEVER;
  }
  const [, scheme, credentials, nodeList] = cluster as unknown as [string, string, string | undefined, string];
  const nodes: RedisNode[] = [];
  for (const node of nodeList.split(',')) {
    const parts = NODE.exec(node.trim());
    const port = Number(parts?.[2]);
    if (!parts || port < 1 || port > 65535) {
      context.addIssue({ code: 'custom', message: `REDIS_URL names a cluster node that is not host:port: '${node}'` });
      return z.NEVER;
    }
    nodes.push({ host: parts[1]!.replace(/^\[|\]$/g, ''), port });
  }
  const [username, password] = credentials === undefined ? [] : credentials.split(/:(.*)/s, 2).map(decodeURIComponent);
  return {
    kind: 'cluster',
    url,
    nodes,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    tls: scheme === 'rediss',
  };
});

/** REDIS_URL fit for a log line or a printed environment: any password hidden. */
export function redactedRedisUrl(target: RedisTarget): string {
  return target.url.replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}

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
