import type { Config } from '../config.js';
import type { JobQueues } from '../jobs/job-queues.js';
import type { Logger } from '../lib/logger.js';
import type { EventConsumer } from './consumer.js';
import type { ConsumerTaskStore } from './consumer-task-store.js';

/** Done tasks are kept this long for inspection, then forgotten. */
const DONE_TASK_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * The seam's one recovery: re-enqueues the job of every task still pending after
 * CONSUMER_TASK_GRACE_MS. A job that still exists in Redis (waiting, retrying, running) keeps its
 * id, so adding it again changes nothing; one that Redis lost is created anew.
 */
export async function resumeStalledTasks(
  services: {
    config: Pick<Config, 'CONSUMER_TASK_GRACE_MS'>;
    consumerTasks: ConsumerTaskStore;
    consumers: readonly EventConsumer<any>[];
    jobs: Pick<JobQueues, 'add'>;
    logger: Logger;
  },
  limit: number,
): Promise<{ resumed: number; pruned: number }> {
  const stalled = await services.consumerTasks.findStalled(services.config.CONSUMER_TASK_GRACE_MS, limit);
  await Promise.all(
    stalled.map(({ eventId, consumer: name }) => {
      const consumer = services.consumers.find((candidate) => candidate.name === name);
      if (!consumer?.job) return services.logger.warn({ consumer: name, eventId }, 'pending task of a consumer that no longer exists');
      return services.jobs.add(consumer.job, { eventId });
    }),
  );
  const pruned = await services.consumerTasks.pruneDone(DONE_TASK_RETENTION_MS, limit);
  return { resumed: stalled.length, pruned };
}
