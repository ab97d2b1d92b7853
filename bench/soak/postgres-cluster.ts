// A PostgreSQL cluster of the soak's own: initdb into a temporary directory, its own port, the
// machine's PostgreSQL binaries. The soak stops, starts and cuts it; the shared server is never touched.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface PostgresCluster {
  port: number;
  url(database: string): string;
  start(): Promise<void>;
  /** A fast shutdown: every connection is closed, nothing committed is lost. */
  stop(): Promise<void>;
  /** `pg_terminate_backend` on every connection to `database` but its own; returns how many. */
  terminateConnections(database: string): Promise<number>;
  destroy(): Promise<void>;
}

/** The newest PostgreSQL of the machine (Debian keeps them in /usr/lib/postgresql/<major>/bin), or PG_BIN. */
function binDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  if (majors.length === 0)
    throw new Error('no PostgreSQL binaries in /usr/lib/postgresql; set PG_BIN to the directory of initdb and pg_ctl');
  return path.join(root, majors[0]!, 'bin');
}

/** PostgreSQL refuses to run as root: then the cluster belongs to the `postgres` user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function run(command: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`${path.basename(command)} ${args.join(' ')} exited with ${code}: ${stderr}`);
}

export async function createPostgresCluster(port: number): Promise<PostgresCluster> {
  const bin = binDir();
  const user = runAs();
  const dir = mkdtempSync(path.join(tmpdir(), 'ag-soak-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  await run(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], user);
  // fsync off spares the shared machine's disk: the soak stops PostgreSQL cleanly, it never crashes it.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c max_connections=200 -c fsync=off`;
  const pgCtl = (...args: string[]) => run(path.join(bin, 'pg_ctl'), ['-D', data, '-w', '-l', path.join(dir, 'log'), ...args], user);
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  const cluster: PostgresCluster = {
    port,
    url,
    start: () => pgCtl('-o', options, 'start'),
    stop: () => pgCtl('-m', 'fast', 'stop'),
    async terminateConnections(database) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        const { rows } = await client.query(
          'SELECT count(pg_terminate_backend(pid))::int AS cut FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [database],
        );
        return rows[0].cut as number;
      } finally {
        await client.end();
      }
    },
    async destroy() {
      await cluster.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
