import { Queue } from 'bullmq';
import { Batcher } from '../lib/batcher.js';
import type { Logger } from '../lib/logger.js';
import type { RedisClient } from '../lib/redis.js';
import type { JobDefinition } from './job.js';

/**
 * How long a loop that hands a batch of rows to the queues (outbox relay, deadline watcher) waits
 * on Redis before it treats Redis as down and leaves the rows for its next look.
 */
export const ENQUEUE_BATCH_TIMEOUT_MS = 5_000;

/**
 * The BullMQ prefix of a queue, for its producers and its workers alike. On a Redis Cluster every
 * key of a queue must sit in one hash slot (BullMQ's scripts touch several at once), so the queue's
 * name is a hash tag there, which also spreads the queues over the cluster. One server keeps the
 * plain prefix: the keys its jobs already have stay where running and future releases look.
 */
export function queuePrefix(redis: Pick<RedisClient, 'isCluster'>, prefix: string, queue: string): string {
  return redis.isCluster ? `${prefix}:{${queue}}` : prefix;
}

/** Completed jobs are kept a while for Bull Board, failed ones longer for inspection. */
export const retention = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

/**
 * One queue as its producers see it: what the composition root hands a domain service, which
 * declares the part it uses as a port of its own and so knows no queue.
 */
export interface JobProducer<Payload> {
  add(payload: Payload, delayMs?: number): Promise<void>;
  rerun(payload: Payload, delayMs?: number): Promise<void>;
}

interface Enqueued {
  payload: unknown;
  delayMs: number;
}

/**
 * The producer side of every queue in the registry, shared by the API and the workers. Jobs added
 * in one turn of the event loop go to Redis in one `addBulk` per queue, so a burst of requests
 * shares round trips.
 */
export class JobQueues {
  private readonly queues = new Map<string, { queue: Queue; batch: Batcher<Enqueued> }>();

  constructor(
    connection: RedisClient,
    prefix: string,
    logger: Logger,
    readonly definitions: readonly JobDefinition<any>[],
  ) {
    for (const definition of definitions) {
      const queue = new Queue(definition.queue, {
        connection,
        prefix: queuePrefix(connection, prefix, definition.queue),
        defaultJobOptions: retention,
      });
      queue.on('error', (error) => logger.warn({ err: error, queue: queue.name }, 'queue error'));
      const batch = new Batcher<Enqueued>(async (items) => {
        await queue.addBulk(
          items.map(({ payload, delayMs }) => ({ name: definition.queue, data: payload, opts: jobOptions(definition, payload, delayMs) })),
        );
      });
      this.queues.set(definition.queue, { queue, batch });
    }
  }

  /** The BullMQ queue of a definition: for Bull Board and for tests that look inside. */
  queue(definition: Pick<JobDefinition<any>, 'queue'>): Queue {
    const entry = this.queues.get(definition.queue);
    if (!entry) throw new Error(`queue ${definition.queue} is not in the job registry`);
    return entry.queue;
  }

  all(): Queue[] {
    return [...this.queues.values()].map((entry) => entry.queue);
  }

  /** Enqueues a job, validated against its definition's schema, to run now or after `delayMs`. */
  async add<Payload>(definition: JobDefinition<Payload>, payload: Payload, delayMs = 0): Promise<void> {
    const entry = this.queues.get(definition.queue);
    if (!entry) throw new Error(`queue ${definition.queue} is not in the job registry`);
    await entry.batch.add({ payload: definition.payload.parse(payload), delayMs: Math.max(0, delayMs) });
  }

  /**
   * Enqueues a job whose id may have been used before, to run now or after `delayMs`: for
   * redelivery, sweepers and jobs that step aside. A delayed job under that id runs now instead
   * (when no delay is asked), one waiting or running is left to run, and a finished one (completed,
   * or failed for good and kept for inspection) is removed first: Redis would take the add for a
   * duplicate of it and drop it, and the work would wait for the finished job's retention to end.
   */
  async rerun<Payload>(definition: JobDefinition<Payload>, payload: Payload, delayMs = 0): Promise<void> {
    if (!definition.jobId) return this.add(definition, payload, delayMs);
    const queue = this.queue(definition);
    const jobId = definition.jobId(payload);
    switch (await queue.getJobState(jobId)) {
      case 'completed':
      case 'failed':
        await queue.remove(jobId);
        break;
      case 'unknown':
        break;
      case 'delayed':
        if (delayMs === 0) await (await queue.getJob(jobId))?.promote();
        return;
      default: // waiting or running: it runs anyway
        return;
    }
    await this.add(definition, payload, delayMs);
  }

  /** The producer side of one queue: `add` and `rerun` bound to its definition. */
  producer<Payload>(definition: JobDefinition<Payload>): JobProducer<Payload> {
    return {
      add: (payload, delayMs) => this.add(definition, payload, delayMs),
      rerun: (payload, delayMs) => this.rerun(definition, payload, delayMs),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((queue) => queue.close()));
  }
}

function jobOptions<Payload>(definition: JobDefinition<Payload>, payload: Payload, delayMs: number) {
  const { attempts, backoff } = definition.options;
  return { attempts, backoff, delay: delayMs, ...(definition.jobId ? { jobId: definition.jobId(payload) } : {}) };
}
