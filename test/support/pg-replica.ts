import { execFile } from 'node:child_process';
import { appendFile, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './listen.js';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';

export interface StreamingPair {
  /** postgresql:// URLs of a database on each server (the replica's is the primary's, streamed). */
  primaryUrl: (database: string) => string;
  replicaUrl: (database: string) => string;
  /** Runs one statement on the replica's maintenance database. */
  onReplica<Row extends pg.QueryResultRow>(text: string): Promise<Row[]>;
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Stops the replica at once (as a crash would), or starts it again. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A PostgreSQL 15 primary and a streaming replica of it, both of the caller's own: initdb'ed as
 * the postgres OS user into a temporary directory, on free ports, the replica made with
 * `pg_basebackup -R` from the primary. Nothing on the machine's running server is touched.
 */
export async function startStreamingPair(): Promise<StreamingPair> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ag-pg-pair-'));
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]).then((ids) =>
    ids.map((id) => Number(id.stdout.trim())),
  );
  await chown(dir, uid!, gid!);
  const asPostgres = (command: string, args: string[]) => run('runuser', ['-u', 'postgres', '--', path.join(BIN, command), ...args]);
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryDir = path.join(dir, 'primary');
  const replicaDir = path.join(dir, 'replica');
  const pgCtl = (dataDir: string, ...args: string[]) => asPostgres('pg_ctl', ['-D', dataDir, '-l', `${dataDir}.log`, '-w', ...args]);
  const url = (port: number) => (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;

  let replicaRunning = false;
  const close = async () => {
    await Promise.allSettled([
      ...(replicaRunning ? [pgCtl(replicaDir, '-m', 'immediate', 'stop')] : []),
      pgCtl(primaryDir, '-m', 'immediate', 'stop'),
    ]);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await asPostgres('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '--no-sync']);
    // Durability is not what this pair is for: nothing is flushed, so the tests stay quick.
    await appendFile(
      path.join(primaryDir, 'postgresql.conf'),
      [
        `port = ${primaryPort}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        'wal_level = replica',
        'max_wal_senders = 4',
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        'max_connections = 200',
        '',
      ].join('\n'),
    );
    await pgCtl(primaryDir, 'start');
    await asPostgres('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      replicaDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await appendFile(path.join(replicaDir, 'postgresql.conf'), `port = ${replicaPort}\nhot_standby = on\n`);
    await pgCtl(replicaDir, 'start');
    replicaRunning = true;
  } catch (error) {
    await close();
    throw error;
  }

  const onReplica = async <Row extends pg.QueryResultRow>(text: string) => {
    const client = new pg.Client({ connectionString: url(replicaPort)('postgres') });
    await client.connect();
    try {
      return (await client.query<Row>(text)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    primaryUrl: url(primaryPort),
    replicaUrl: url(replicaPort),
    onReplica,
    pauseReplay: async () => void (await onReplica('SELECT pg_wal_replay_pause()')),
    resumeReplay: async () => void (await onReplica('SELECT pg_wal_replay_resume()')),
    async stopReplica() {
      await pgCtl(replicaDir, '-m', 'immediate', 'stop');
      replicaRunning = false;
    },
    async startReplica() {
      await pgCtl(replicaDir, 'start');
      replicaRunning = true;
    },
    close,
  };
}
