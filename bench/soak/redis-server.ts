// A Redis of the soak's own, on its own port, keeping nothing on disk (as production here): a
// restart comes back empty.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface RedisServer {
  url: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Ready to accept connections') && resolve());
    child.on('exit', (code) => reject(new Error(`redis-server on port ${port} exited with ${code}`)));
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

export async function startRedisServer(port: number): Promise<RedisServer> {
  let child = await launch(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    async restart() {
      await terminate(child);
      child = await launch(port);
    },
    stop: () => terminate(child),
  };
}
