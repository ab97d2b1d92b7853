import { z } from 'zod';

// Where Redis is, as the configuration reads it: apart from the client (./redis.ts), so that
// reading the environment does not load ioredis into a process that never connects (the CLI).

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
