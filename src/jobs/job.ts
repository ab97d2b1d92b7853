import type { Job } from 'bullmq';
import type { z } from 'zod';
import type { Config } from '../config.js';

export interface JobOptions {
  /** Runs of one job before it fails for good; our own failures (database away) are what they cover. */
  attempts: number;
  backoff: { type: 'exponential' | 'fixed'; delay: number };
  /** Jobs of this queue one worker process runs at once. */
  concurrency: (config: Config) => number;
}

/**
 * A queue as its producers and the worker both know it: its name, the zod schema of its payload
 * (ids only: processors re-read rows and re-check their state, so a stale or repeated job is
 * harmless) and its options. Producers (API, relay, workers), the worker roles of
 * `WORKER_QUEUES`, Bull Board and worker concurrency all read the same declaration. What runs its
 * jobs is apart from it, and only the worker knows that (workers/processors/registry.ts).
 */
export interface JobDefinition<Payload = unknown> {
  queue: string;
  payload: z.ZodType<Payload>;
  options: JobOptions;
  /** A deterministic id, so that a job enqueued twice (API and sweeper, relay after a crash) exists once. */
  jobId?: (payload: Payload) => string;
  /** Jobs that run periodically while a worker with this role is up (BullMQ job schedulers). */
  schedules?: (config: Config) => { id: string; payload: Payload; everyMs: number }[];
}

export function defineJob<Payload>(definition: JobDefinition<Payload>): JobDefinition<Payload> {
  return definition;
}

export type PayloadOf<Definition> = Definition extends JobDefinition<infer Payload> ? Payload : never;

/**
 * Runs one job of a queue: what a processor builds, once per worker process. `job` and `token`
 * are BullMQ's, for processors that reschedule themselves; `signal` aborts when the worker stops,
 * for long jobs that can save their place and give way.
 */
export type JobHandler<Payload> = (payload: Payload, job: Job, token: string | undefined, signal?: AbortSignal) => Promise<unknown>;
