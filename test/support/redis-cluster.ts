import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { eventually } from './eventually.js';
import { freePort } from './listen.js';

const run = promisify(execFile);

export interface RedisClusterUnderTest {
  /** REDIS_URL naming the cluster by two of its nodes (the others are found from them). */
  url: string;
  ports: number[];
  /**
   * Promotes a replica of the master serving `key`'s slot with CLUSTER FAILOVER (the coordinated
   * kind: the old master stops taking writes, the replica catches up and takes over), and waits
   * until every node agrees. Returns the ports of the old and the new master.
   */
  failOver(key: string): Promise<{ from: number; to: number }>;
  stop(): Promise<void>;
}

/** One node's view: `[id, address, flags, master id, ..., slots...]` per line of CLUSTER NODES. */
async function clusterNodes(port: number): Promise<{ id: string; port: number; master: boolean; masterId: string }[]> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'nodes']);
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId] = line.split(' ') as [string, string, string, string];
      return { id, port: Number(address.split('@')[0]!.split(':')[1]), master: flags.includes('master'), masterId };
    });
}

async function clusterState(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
  return /cluster_state:(\w+)/.exec(stdout)?.[1] ?? 'unknown';
}

/**
 * A real Redis Cluster of the test's own: three masters and three replicas, each a redis-server
 * on free ports (client and cluster bus), nothing on disk.
 */
export async function startRedisCluster(): Promise<RedisClusterUnderTest> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ag-redis-cluster-'));
  const ports: number[] = [];
  const servers: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      servers.map(async (server) => {
        if (server.exitCode !== null || server.signalCode !== null) return;
        server.kill('SIGKILL');
        await once(server, 'exit');
      }),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let node = 0; node < 6; node++) {
      const [port, busPort] = [await freePort(), await freePort()];
      const server = spawn(
        'redis-server',
        [
          ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--dir', dir],
          ...['--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no'],
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Ready to accept connections') && resolve());
        server.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
      });
      ports.push(port);
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await eventually(async () => (await Promise.all(ports.map(clusterState))).every((state) => state === 'ok'), 15_000);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    url: `redis+cluster://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}`,
    ports,
    async failOver(key) {
      type Shard = [number, number, [string, number, string], ...[string, number, string][]];
      const probe = new Redis(ports[0]!);
      const slot = (await probe.call('cluster', 'keyslot', key)) as number;
      // A replica shows in CLUSTER SLOTS only once it has attached to its master, which a loaded
      // machine may not have done yet: wait for the slot's master to have one.
      let shard: Shard | undefined;
      await eventually(async () => {
        const shards = (await probe.call('cluster', 'slots')) as Shard[];
        shard = shards.find(([first, last, , replica]) => slot >= first && slot <= last && replica !== undefined);
        return shard !== undefined;
      }, 15_000);
      probe.disconnect();
      const [, , [, from], [, to]] = shard as [number, number, [string, number, string], [string, number, string]];
      await run('redis-cli', ['-p', String(to), 'cluster', 'failover']);
      await eventually(async () => {
        const views = await Promise.all(ports.map(clusterNodes));
        return views.every((view) => view.find((node) => node.port === to)?.master && !view.find((node) => node.port === from)?.master);
      }, 15_000);
      return { from, to };
    },
    stop,
  };
}
