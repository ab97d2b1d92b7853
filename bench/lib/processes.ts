// The processes a benchmark measures, as children of the bench process: the web and worker
// processes of the product (compiled, as the Procfile runs them), and helpers of the bench itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseProcfile } from '../../src/cli/procfile.js';
import { REDIS_URL } from './fixtures.js';
import { requestJson } from './http.js';
import { envFlag, log } from './run.js';

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface NodeProcess {
  label: string;
  /** The pid of the node process itself (not a wrapper), for /proc sampling. */
  pid: number;
  exited(): boolean;
  stderrTail(): string;
  stop(): Promise<void>;
}

export interface NodeProcessOptions {
  label: string;
  /** Arguments after `node`, e.g. ['dist/workers/index.js'] or ['--import', 'tsx', 'src/server.ts']. */
  args: string[];
  env: Record<string, string>;
  /** stdout is appended to this file; without it (and without onStdoutLine) it goes to /dev/null. */
  stdoutFile?: string;
  /** Every line of stdout, for children that report on it. */
  onStdoutLine?: (line: string) => void;
  /** A port that must be free before the start (a leftover of an earlier run would answer instead). */
  port?: number;
  /** Polled every 100 ms until it holds. */
  isReady: () => Promise<boolean> | boolean;
  readyTimeoutMs?: number;
}

/**
 * Starts `node <args>` so that the child *is* the node process. It goes through bash only to raise
 * its open-files limit to the hard limit (`exec` keeps the pid). The tail of stderr is kept to
 * explain a failed start or an unexpected exit.
 */
export async function startNodeProcess(options: NodeProcessOptions): Promise<NodeProcess> {
  if (options.port !== undefined) await assertPortFree(options.port);
  const stdoutFd = options.stdoutFile ? openSync(options.stdoutFile, 'a') : undefined;
  const stdout = stdoutFd ?? (options.onStdoutLine ? 'pipe' : 'ignore');
  let child: ChildProcess;
  try {
    child = spawn('bash', ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, ...options.args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', stdout, 'pipe'],
    });
  } finally {
    if (stdoutFd !== undefined) closeSync(stdoutFd);
  }
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  if (options.onStdoutLine && child.stdout) {
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop()!;
      for (const line of lines) options.onStdoutLine!(line);
    });
  }
  const exited = once(child, 'exit');
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await stopChild(child);
  };
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  try {
    const giveUpAt = Date.now() + readyTimeoutMs;
    for (;;) {
      if (hasExited) throw new Error(`exited with code ${child.exitCode} (signal ${child.signalCode})`);
      if (await Promise.resolve(options.isReady()).catch(() => false)) break;
      if (Date.now() > giveUpAt) throw new Error(`not ready after ${readyTimeoutMs} ms`);
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw new Error(`${options.label} (${options.args.join(' ')}) did not start: ${String(error)}\n--- its stderr ---\n${stderr}`);
  }
  void exited.then(() => {
    if (!stopping)
      log(`!!! ${options.label} (pid ${child.pid}) exited unexpectedly: code ${child.exitCode}, signal ${child.signalCode}\n${stderr}`);
  });
  return { label: options.label, pid: child.pid!, exited: () => hasExited, stderrTail: () => stderr, stop };
}

/** SIGTERM, then SIGKILL after 20 s; resolves once the child has exited. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function assertPortFree(port: number): Promise<void> {
  const probe = net.createServer();
  try {
    probe.listen(port);
    await once(probe, 'listening');
  } catch (error) {
    throw new Error(`port ${port} is already in use (${String(error)}); is another benchmark running?`);
  } finally {
    probe.close();
  }
}

/** True once GET <path> on the port answers 200. */
export async function answers200(port: number, path: string): Promise<boolean> {
  return (await requestJson({ port, method: 'GET', path })).status === 200;
}

export interface CommandResult {
  code: number;
  /** The tail of stdout and stderr together. */
  output: string;
}

/** Runs a command in the project to its end; resolves with its exit code and the tail of its output. */
export async function runCommand(command: string, args: string[], timeoutMs: number): Promise<CommandResult> {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-6000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code: code ?? (signal ? 128 : 1), output };
}

let build: Promise<CommandResult> | undefined;

/**
 * `npm run build`, once per bench process, so that the product runs compiled as in production.
 * BENCH_BUILD=0 skips it and uses dist/ as it is.
 */
export function buildOnce(): Promise<CommandResult> {
  if (!envFlag('BENCH_BUILD', true)) return Promise.resolve({ code: 0, output: 'BENCH_BUILD=0: dist/ used as it is' });
  build ??= (log('npm run build'), runCommand('npm', ['run', 'build'], 300_000));
  return build;
}

async function requireBuild(): Promise<void> {
  const { code, output } = await buildOnce();
  if (code !== 0) throw new Error(`npm run build failed (code ${code}):\n${output}`);
}

/** The node flags the Procfile runs a process type with (docs/operations.md#runtime): the bench measures processes as deployed. */
function procfileNodeFlags(processType: 'web' | 'worker'): string[] {
  const command = parseProcfile(readFileSync(`${PROJECT_ROOT}/Procfile`, 'utf8')).get(processType) ?? '';
  return command.split(/\s+/).filter((word) => word.startsWith('--'));
}

/**
 * The API as production runs it (`node dist/src/server.js`), its logs at `info` sent to /dev/null,
 * or appended to `stdoutFile`.
 */
export async function startWebServer(options: {
  port: number;
  databaseUrl: string;
  redisPrefix: string;
  env?: Record<string, string>;
  stdoutFile?: string;
}): Promise<NodeProcess> {
  await requireBuild();
  // BENCH_WEB_CPU_PROF=<dir>: the web process writes a CPU profile there when it stops.
  const profileDir = process.env.BENCH_WEB_CPU_PROF;
  return startNodeProcess({
    label: 'web',
    args: [...procfileNodeFlags('web'), ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), 'dist/src/server.js'],
    env: {
      NODE_ENV: 'production',
      PORT: String(options.port),
      DATABASE_URL: options.databaseUrl,
      REDIS_URL,
      REDIS_PREFIX: options.redisPrefix,
      LOG_LEVEL: 'info',
      ...options.env,
    },
    port: options.port,
    stdoutFile: options.stdoutFile,
    isReady: () => answers200(options.port, '/readyz'),
  });
}

/** What a worker logs once its queues run. */
const WORKER_STARTED = '"msg":"worker started"';

/**
 * A worker (`args`: e.g. ['dist/workers/index.js']), ready once it logs that it started. With
 * `stdoutFile` its log is kept there; without, it is only read for that line.
 */
export function startWorker(options: {
  label: string;
  args: string[];
  env: Record<string, string>;
  stdoutFile?: string;
}): Promise<NodeProcess> {
  const { stdoutFile } = options;
  let started = false;
  return startNodeProcess({
    label: options.label,
    args: [...procfileNodeFlags('worker'), ...options.args],
    env: options.env,
    ...(stdoutFile ? { stdoutFile } : { onStdoutLine: (line: string) => (started ||= line.includes(WORKER_STARTED)) }),
    isReady: () =>
      started || (stdoutFile !== undefined && existsSync(stdoutFile) && readFileSync(stdoutFile, 'utf8').includes(WORKER_STARTED)),
  });
}

/** The bare Express 5 "hello JSON" server: the ceiling the API is compared with. */
export function startHelloServer(port: number): Promise<NodeProcess> {
  return startNodeProcess({
    label: 'hello',
    args: ['--import', 'tsx', 'bench/hello-server.ts'],
    env: { PORT: String(port) },
    port,
    isReady: () => answers200(port, '/'),
  });
}
