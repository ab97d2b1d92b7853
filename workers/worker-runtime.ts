import { Worker } from 'bullmq';
import type { JobDefinition } from '../src/jobs/job.js';
import { approvalExpiryJob } from '../src/jobs/approval-expiry.js';
import { approvalReminderJob } from '../src/jobs/approval-reminder.js';
import { queuePrefix } from '../src/jobs/job-queues.js';
import { closeRedis, createRedis, type RedisClient } from '../src/lib/redis.js';
import { serveMetrics } from '../src/http/metrics-endpoint.js';
import { DeadlineWatcher } from './deadline-watcher.js';
import { OutboxRelay } from './outbox-relay.js';
import { ReminderWatcher } from './reminder-watcher.js';
import { JOBS, type Services } from '../src/services.js';
import { processorsFor } from './processors/registry.js';

/** Outbox passes one worker's relay runs at once (see RelayOptions). */
const RELAY_PASSES_IN_FLIGHT = 2;

/** Due approvals one look of a deadline watcher hands to the expiry queue. */
const DEADLINE_PAGE_SIZE = 500;

/**
 * What a worker process can do: relay the outbox, and run any queue of JOBS (with
 * `approval-expiry`, also watch the deadlines that feed it).
 */
export const WORKER_ROLES: readonly string[] = ['outbox-relay', ...JOBS.map((job) => job.queue)];

/** The roles of WORKER_QUEUES (comma-separated), all when unset; an unknown one is refused by name. */
export function parseWorkerRoles(list: string | undefined): string[] {
  if (!list) return [...WORKER_ROLES];
  const roles = list
    .split(',')
    .map((role) => role.trim())
    .filter(Boolean);
  const unknown = roles.filter((role) => !WORKER_ROLES.includes(role));
  if (unknown.length > 0) throw new Error(`WORKER_QUEUES names unknown roles: ${unknown.join(', ')} (known: ${WORKER_ROLES.join(', ')})`);
  return roles;
}

export interface WorkerRuntime {
  /** Stops taking work, lets running jobs finish, closes its connections. */
  stop(): Promise<void>;
}

/**
 * Starts the processors of the given roles inside this process and, with `outbox-relay`,
 * `approval-expiry` and `approval-reminders`, the relay's, the deadline watcher's and the reminder
 * watcher's loops.
 */
export async function startWorkerRuntime(services: Services, roles: readonly string[]): Promise<WorkerRuntime> {
  const { config, logger } = services;
  const connections: RedisClient[] = [];
  const workers: Worker[] = [];
  const stoppers: (() => Promise<void>)[] = [];

  const runUntilStopped = (loop: (stop: AbortSignal) => Promise<void>) => {
    const stop = new AbortController();
    const running = loop(stop.signal);
    stoppers.push(async () => {
      stop.abort();
      await running;
    });
  };

  const processors = processorsFor(services.consumers);
  const startWorker = (definition: JobDefinition<any>) => {
    const queue = definition.queue;
    const processor = processors.get(queue);
    if (!processor) throw new Error(`no processor runs the queue ${queue}`);
    // Workers block on Redis, so each gets its own connection without a retry limit (BullMQ requirement).
    const connection = createRedis(config.REDIS_URL, 'blocking', `worker:${queue}`, logger);
    connections.push(connection);
    const handle = processor(services);
    const worker = new Worker(queue, (job, token, signal) => handle(definition.payload.parse(job.data), job, token, signal), {
      connection,
      prefix: queuePrefix(connection, config.REDIS_PREFIX, queue),
      concurrency: definition.options.concurrency(config),
      lockDuration: config.WORKER_LOCK_DURATION_MS,
      // A job whose worker died is taken over once its lock lapses, not 30 s later.
      stalledInterval: config.WORKER_LOCK_DURATION_MS,
    });
    worker.on('completed', () => services.metrics.jobs.inc({ queue, result: 'completed' }));
    worker.on('failed', (job, error) => {
      services.metrics.jobs.inc({ queue, result: 'failed' });
      logger.warn({ err: error, queue, jobId: job?.id, attempts: job?.attemptsMade }, 'job failed');
    });
    worker.on('error', (error) => logger.error({ err: error, queue }, 'worker error'));
    workers.push(worker);
  };

  const declareSchedules = async (definitions: readonly JobDefinition<any>[]) => {
    for (const definition of definitions) {
      for (const { id, payload, everyMs } of definition.schedules?.(config) ?? []) {
        await services.jobs.queue(definition).upsertJobScheduler(id, { every: everyMs }, { name: id, data: payload });
      }
    }
  };

  const definitions = services.jobs.definitions.filter((definition) => roles.includes(definition.queue));
  definitions.forEach(startWorker);
  const scheduled = definitions.filter((definition) => definition.schedules);
  if (scheduled.length > 0) {
    await declareSchedules(scheduled);
    // Redis keeps nothing on disk: after it restarts empty, the schedules must be declared again.
    const redeclare = () =>
      void declareSchedules(scheduled).catch((error: unknown) => logger.warn({ err: error }, 'could not redeclare schedules'));
    services.redis.on('ready', redeclare);
    stoppers.push(async () => void services.redis.off('ready', redeclare));
  }

  if (roles.includes('outbox-relay')) {
    const relay = new OutboxRelay(services, {
      batchSize: config.OUTBOX_BATCH_SIZE,
      pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
      leaseMs: config.OUTBOX_LEASE_MS,
      passesInFlight: RELAY_PASSES_IN_FLIGHT,
    });
    const subscriber = createRedis(config.REDIS_URL, 'subscriber', 'outbox-relay', logger);
    connections.push(subscriber);
    await services.outboxSignal
      .listen(subscriber, () => relay.signal())
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'outbox relay not subscribed; polling only');
      });
    runUntilStopped((stop) => relay.run(stop));
  }

  if (roles.includes(approvalExpiryJob.queue)) {
    const watcher = new DeadlineWatcher(services.sql, services.jobs, logger, {
      maxWaitMs: config.EXPIRY_WATCH_INTERVAL_MS,
      aheadMs: config.EXPIRY_WATCH_INTERVAL_MS + config.EXPIRY_LEAD_MS,
      leadMs: config.EXPIRY_LEAD_MS,
      pageSize: DEADLINE_PAGE_SIZE,
    });
    runUntilStopped((stop) => watcher.run(stop));
  }

  if (roles.includes(approvalReminderJob.queue)) {
    const watcher = new ReminderWatcher(services.sql, services.jobs, logger, config.REMINDER_WATCH_INTERVAL_MS);
    runUntilStopped((stop) => watcher.run(stop));
  }

  const { METRICS_TOKEN, METRICS_PORT } = config;
  if (METRICS_TOKEN && METRICS_PORT !== undefined) {
    const server = await serveMetrics(services.metrics, METRICS_TOKEN, METRICS_PORT);
    stoppers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }

  logger.info({ roles }, 'worker started');
  return {
    async stop() {
      await Promise.all([
        ...workers.map((worker) => {
          // Long jobs that listen for it (bulk exports) save their place and give their job back.
          worker.cancelAllJobs('worker stopping');
          return worker.close();
        }),
        ...stoppers.map((stop) => stop()),
      ]);
      await Promise.all(connections.map(closeRedis));
    },
  };
}
