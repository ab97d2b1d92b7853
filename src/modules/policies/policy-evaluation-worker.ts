// A worker thread of the policy evaluation pool (policy-evaluation-pool.ts): runs rules, or
// compiles patterns, for the thread that owns it, which stops it when it overruns its time limit.
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { patternProblem, runRules } from './policy-language.js';
import type { PoolAnswer, PoolTask } from './policy-evaluation-pool.js';

// Evaluations take only the CPU that the event loop and PostgreSQL leave: on Linux the nice value
// belongs to a thread, so this lowers this worker's priority alone (elsewhere it would lower the
// whole process's, hence the check).
if (process.platform === 'linux') setPriority(constants.priority.PRIORITY_LOW);

const port = parentPort!;
port.on('message', ({ id, task }: { id: number; task: PoolTask }) => {
  const answer: PoolAnswer =
    task.kind === 'run'
      ? { kind: 'run', run: runRules(task.expressions, task.input) }
      : task.kind === 'runMany'
        ? { kind: 'runMany', runs: task.items.map(({ input, rules }) => runRules(task.expressions.slice(0, rules), input)) }
        : { kind: 'patterns', problems: task.patterns.map(patternProblem) };
  port.postMessage({ id, answer });
});
port.postMessage('ready');
