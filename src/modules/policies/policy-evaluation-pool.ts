import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { RuleInput, RuleRun } from './policy-language.js';

/** Work sent to an evaluation worker. */
export type PoolTask =
  | { kind: 'run'; expressions: string[]; input: RuleInput }
  /** Many inputs, each run against the first `rules` expressions. */
  | { kind: 'runMany'; expressions: string[]; items: { input: RuleInput; rules: number }[] }
  | { kind: 'patterns'; patterns: string[] };

export type PoolAnswer =
  { kind: 'run'; run: RuleRun } | { kind: 'runMany'; runs: RuleRun[] } | { kind: 'patterns'; problems: (string | null)[] };

/** Why a task got no answer: it overran its time limit, waited too long, or its worker died. */
export type PoolOutcome = PoolAnswer | { kind: 'stopped'; reason: string };

export interface PoolLimits {
  /** Worker threads; each can keep one core busy. */
  workers: number;
  /**
   * A task using more CPU time than this is stopped: its worker is terminated and replaced. CPU time,
   * not wall time: the workers run at low priority, and a busy machine may leave them waiting.
   */
  timeLimitMs: number;
  /** A task running this long in wall time is stopped all the same, whatever CPU time it had. */
  wallLimitMs: number;
  /** A task that has not started after this long is answered without running. */
  queueLimitMs: number;
  /** The same, for a task that arrives while no worker has started yet (the first one, or after a replacement). */
  startupLimitMs: number;
}

export const DEFAULT_POOL_LIMITS: PoolLimits = {
  workers: Math.max(1, Math.min(4, availableParallelism() - 1)),
  timeLimitMs: 100,
  wallLimitMs: 2_000,
  queueLimitMs: 2_000,
  startupLimitMs: 30_000,
};

interface Job {
  id: number;
  task: PoolTask;
  fairnessKey: string;
  resolve: (outcome: PoolOutcome) => void;
  queueTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
  runTimer?: NodeJS.Timeout;
}

/** The shortest wait before a running task's CPU time is read again. */
const MIN_RECHECK_MS = 5;

/**
 * The worker's module. Run from source (tests, tsx) it is TypeScript too, and a small ES module
 * registers tsx in the thread before importing it (`--import tsx` does not reach worker threads).
 */
function workerEntry(): URL {
  if (!import.meta.url.endsWith('.ts')) return new URL('./policy-evaluation-worker.js', import.meta.url);
  const source = new URL('./policy-evaluation-worker.ts', import.meta.url);
  const bootstrap = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register(); await import(${JSON.stringify(source.href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`);
}

/**
 * Worker threads that run policy evaluations off the event loop, each under a hard time limit:
 * a worker that overruns is terminated (which interrupts even a tight loop) and replaced.
 * Waiting tasks are taken round-robin by fairness key (the organization), so one organization's
 * queue of slow evaluations delays another's by at most one task per worker.
 */
export class EvaluationPool {
  private readonly slots = new Set<Slot>();
  /** Waiting jobs by fairness key; Map order is the round-robin order. */
  private readonly queues = new Map<string, Job[]>();
  private nextId = 0;

  constructor(private readonly limits: PoolLimits = DEFAULT_POOL_LIMITS) {}

  run(task: PoolTask, fairnessKey: string): Promise<PoolOutcome> {
    return new Promise((resolve) => {
      const job: Job = { id: this.nextId++, task, fairnessKey, resolve };
      // Starting a worker takes a moment (seconds when loaded through tsx on a busy machine).
      const limitMs = [...this.slots].some((slot) => slot.ready) ? this.limits.queueLimitMs : this.limits.startupLimitMs;
      job.queueTimer = setTimeout(() => {
        this.dequeue(job);
        resolve({ kind: 'stopped', reason: `waited more than ${limitMs} ms for an evaluation worker` });
      }, limitMs);
      const queue = this.queues.get(fairnessKey);
      if (queue) queue.push(job);
      else this.queues.set(fairnessKey, [job]);
      this.fill();
      this.dispatch();
    });
  }

  /** Terminates every worker; waiting and running tasks are answered as stopped. */
  async close(): Promise<void> {
    for (const queue of this.queues.values())
      for (const job of queue) this.finish(job, { kind: 'stopped', reason: 'the evaluation pool closed' });
    this.queues.clear();
    await Promise.all([...this.slots].map((slot) => this.retire(slot, { kind: 'stopped', reason: 'the evaluation pool closed' })));
  }

  private fill(): void {
    while (this.slots.size < this.limits.workers) this.spawn();
  }

  private spawn(): void {
    const worker = new Worker(workerEntry(), {
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 32 },
    });
    const slot: Slot = { worker, ready: false };
    this.slots.add(slot);
    worker.unref();
    worker.on('message', (message: 'ready' | { id: number; answer: PoolAnswer }) => {
      if (message === 'ready') slot.ready = true;
      else if (slot.job?.id === message.id) this.release(slot, message.answer);
      this.dispatch();
    });
    worker.on('error', (error) => void this.retire(slot, { kind: 'stopped', reason: `the evaluation worker failed: ${error.message}` }));
    worker.on('exit', () => {
      // Replaced at once only if it had started: a worker that cannot even start would loop.
      const started = slot.ready;
      void this.retire(slot, { kind: 'stopped', reason: 'the evaluation worker exited' });
      if (started && this.queues.size > 0) this.fill();
    });
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.job) continue;
      const job = this.takeNext();
      if (!job) return;
      clearTimeout(job.queueTimer);
      slot.job = job;
      slot.worker.ref();
      const cpuAtStart = slot.worker.cpuUsage();
      const startedAt = Date.now();
      slot.runTimer = setTimeout(() => void this.enforceTimeLimit(slot, job, cpuAtStart, startedAt), this.limits.timeLimitMs);
      slot.worker.postMessage({ id: job.id, task: job.task });
    }
  }

  /** Stops `job` if it has used its CPU time (or its wall time); else looks again when it could have used it. */
  private async enforceTimeLimit(slot: Slot, job: Job, cpuAtStart: Promise<NodeJS.CpuUsage>, startedAt: number): Promise<void> {
    const { timeLimitMs, wallLimitMs } = this.limits;
    const used = await slot.worker.cpuUsage(await cpuAtStart).catch(() => null);
    if (slot.job !== job) return;
    const usedMs = used ? (used.user + used.system) / 1000 : Infinity;
    const wallLeftMs = wallLimitMs - (Date.now() - startedAt);
    if (usedMs < timeLimitMs && wallLeftMs > 0) {
      slot.runTimer = setTimeout(
        () => void this.enforceTimeLimit(slot, job, cpuAtStart, startedAt),
        Math.min(Math.max(timeLimitMs - usedMs, MIN_RECHECK_MS), wallLeftMs),
      );
      return;
    }
    const reason =
      usedMs < timeLimitMs ? `waited longer than ${wallLimitMs} ms for CPU time` : `took longer than the ${timeLimitMs} ms time limit`;
    void this.retire(slot, { kind: 'stopped', reason });
    this.fill();
  }

  private takeNext(): Job | undefined {
    for (const [key, queue] of this.queues) {
      const job = queue.shift()!;
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
      return job;
    }
    return undefined;
  }

  private dequeue(job: Job): void {
    const queue = this.queues.get(job.fairnessKey);
    const index = queue?.indexOf(job) ?? -1;
    if (index === -1) return;
    queue!.splice(index, 1);
    if (queue!.length === 0) this.queues.delete(job.fairnessKey);
  }

  private release(slot: Slot, answer: PoolAnswer): void {
    clearTimeout(slot.runTimer);
    const job = slot.job!;
    slot.job = undefined;
    slot.worker.unref();
    this.finish(job, answer);
  }

  private finish(job: Job, outcome: PoolOutcome): void {
    clearTimeout(job.queueTimer);
    job.resolve(outcome);
  }

  /** Takes a worker out of the pool for good, answering its task (if any) with `outcome`. */
  private async retire(slot: Slot, outcome: PoolOutcome): Promise<void> {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.runTimer);
    if (slot.job) this.finish(slot.job, outcome);
    slot.job = undefined;
    await slot.worker.terminate();
  }
}
