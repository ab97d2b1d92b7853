import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** The Python client's directory (clients/python), for PYTHONPATH: its package without installing it. */
export const PYTHON_CLIENT_PATH = path.resolve(import.meta.dirname, '../../clients/python');

export interface PythonProgram {
  child: ChildProcessWithoutNullStreams;
  /** What it prints, one JSON value a line. */
  lines: AsyncIterableIterator<Record<string, unknown>>;
  /** Resolves once it has exited with status 0; rejects with its stderr otherwise. */
  exited: Promise<void>;
}

/** Runs `program` with `python3 -c`, as an agent would run it, with the Python client importable and AG_URL and AG_KEY set. */
export function startPython(
  program: string,
  { url, key, env = {} }: { url: string; key: string; env?: Record<string, string> },
): PythonProgram {
  const child = spawn('python3', ['-c', program], {
    env: { PATH: process.env.PATH ?? '', PYTHONPATH: PYTHON_CLIENT_PATH, PYTHONDONTWRITEBYTECODE: '1', AG_URL: url, AG_KEY: key, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // `close`, not `exit`: by then everything it printed has been read.
  const exited = once(child, 'close').then(([code]) => {
    if (code !== 0) throw new Error(`python3 exited with ${String(code)}:\n${stderr}`);
  });
  async function* lines() {
    for await (const text of createInterface({ input: child.stdout })) if (text.trim()) yield JSON.parse(text) as Record<string, unknown>;
  }
  return { child, lines: lines(), exited };
}
