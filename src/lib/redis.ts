import { Redis } from 'ioredis';

/**
 * Connections for the web process. Commands fail fast while Redis is away instead of queueing:
 * nothing the API sends to Redis is needed for correctness (state lives in Postgres), so waiting
 * for Redis would only turn its outage into an API outage.
 */
export function createRedisConnection(url: string, role: string): Redis {
  return new Redis(url, { connectionName: `approval-gate:${role}`, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
}

/** A subscriber must queue its SUBSCRIBE until connected, and ioredis re-subscribes after reconnects. */
export function createRedisSubscriber(url: string, role: string): Redis {
  return new Redis(url, { connectionName: `approval-gate:${role}`, maxRetriesPerRequest: null });
}
