import { spawn } from 'node:child_process';

/** The process types of a Procfile (`name: command` lines), in file order. */
export function parseProcfile(text: string): Map<string, string> {
  return new Map(
    text
      .split('\n')
      .map((line) => /^([\w-]+):\s*(.+)$/.exec(line.trim()))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => [match[1]!, match[2]!]),
  );
}

/** Runs one command to its end; resolves with its exit code (1 when a signal ended it). */
export async function runToEnd(command: string): Promise<number> {
  const child = start(command);
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

/**
 * Runs the commands side by side, as one unit: when one exits on its own, the others are stopped
 * (SIGTERM) and the group ends with its exit code (1 for a 0), so a web process that cannot start does not
 * leave a worker running. SIGINT or SIGTERM to this process stops them all, ending with 0.
 * Resolves once every child has exited.
 */
export function runTogether(commands: ReadonlyMap<string, string>, report: (line: string) => void): Promise<number> {
  let exitCode: number | undefined;
  const children = [...commands].map(([name, command]) => ({ name, child: start(command) }));
  const stopAll = (code: number) => {
    if (exitCode !== undefined) return;
    exitCode = code;
    for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  const onSignal = () => stopAll(0);
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);

  return new Promise((resolve) => {
    let running = children.length;
    for (const { name, child } of children) {
      child.on('exit', (code, signal) => {
        if (exitCode === undefined) {
          report(`${name} exited (${signal ?? code})${children.length > 1 ? '; stopping the others' : ''}`);
          stopAll(code || 1);
        }
        if (--running > 0) return;
        process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
        resolve(exitCode!);
      });
    }
  });
}

function start(command: string) {
  // exec: the process itself, not a shell around it, receives our SIGTERM.
  return spawn(`exec ${command}`, { shell: true, stdio: ['ignore', 'inherit', 'inherit'] });
}
