import type { Job } from 'bullmq';
import type { z } from 'zod';
import type { Config } from '../config.js';
import type { Services } from '../services.js';

export interface JobOptions {
  /** Runs of one job before it fails for good; our own failures (database away) are what they cover. */
  attempts: number;
  backoff: { type: 'exponential' | 'fixed'; delay: number };
  /** Jobs of this queue one worker process runs at once. */
  concurrency: (config: Config) => number;
}

/**
 * Handles one job; `job` and `token` are BullMQ's, for processors that reschedule themselves;
 * `signal` aborts when the worker stops, for long jobs that can save their place and give way.
 */
export type JobHandler<Payload> = (payload: Payload, job: Job, token: string | undefined, signal?: AbortSignal) => Promise<unknown>;

/**
 * A queue, everything about it in one place: its name, the zod schema of its payload (ids only:
 * processors re-read rows and re-check their state, so a stale or repeated job is harmless), its
 * options and its processor. Producers (API, relay, workers), the worker roles of `WORKER_QUEUES`,
 * Bull Board and worker concurrency all read the same definition (see registry.ts).
 */
export interface JobDefinition<Payload = unknown> {
  queue: string;
  payload: z.ZodType<Payload>;
  options: JobOptions;
  /** A deterministic id, so that a job enqueued twice (API and sweeper, relay after a crash) exists once. */
  jobId?: (payload: Payload) => string;
  /** Jobs that run periodically while a worker with this role is up (BullMQ job schedulers). */
  schedules?: (config: Config) => { id: string; payload: Payload; everyMs: number }[];
  /** Builds the handler once per worker process, from the services of the composition root. */
  processor: (services: Services) => JobHandler<Payload>;
}

export function defineJob<Payload>(definition: JobDefinition<Payload>): JobDefinition<Payload> {
  return definition;
}
