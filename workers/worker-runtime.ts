import { Worker, type Processor } from 'bullmq';
import { Redis } from 'ioredis';
import { OutboxRelay } from '../src/modules/outbox/outbox-relay.js';
import { OutboxStore } from '../src/modules/outbox/outbox-store.js';
import { closeRedis, createRedisSubscriber } from '../src/lib/redis.js';
import { DeliveryService } from '../src/modules/webhooks/delivery-service.js';
import { DeliveryStore } from '../src/modules/webhooks/delivery-store.js';
import { EndpointSlots } from '../src/modules/webhooks/endpoint-slots.js';
import { allowsPrivateWebhookUrls } from '../src/modules/webhooks/webhook-url-guard.js';
import { createMailer } from '../src/lib/mailer.js';
import { auditExportJob, emailJob, expiryJob, maintenanceJob, webhookDeliveryJob, type QueueName } from '../src/queues/job-definitions.js';
import type { Services } from '../src/services.js';
import { createAuditExportProcessor } from './audit-export-processor.js';
import { createExpiryProcessor } from './expiry-processor.js';
import { createEmailProcessor } from './email-processor.js';
import { createMaintenanceProcessor } from './maintenance-processor.js';
import { createWebhookDeliveryProcessor } from './webhook-delivery-processor.js';

/** What a worker process can do; WORKER_QUEUES picks a subset, all by default. */
export const WORKER_ROLES = [
  'outbox-relay',
  expiryJob.queue,
  webhookDeliveryJob.queue,
  emailJob.queue,
  maintenanceJob.queue,
  auditExportJob.queue,
] as const satisfies readonly (QueueName | 'outbox-relay')[];
export type WorkerRole = (typeof WORKER_ROLES)[number];

export function parseWorkerRoles(list: string | undefined): WorkerRole[] {
  if (!list) return [...WORKER_ROLES];
  const roles = list
    .split(',')
    .map((role) => role.trim())
    .filter(Boolean);
  const unknown = roles.filter((role) => !(WORKER_ROLES as readonly string[]).includes(role));
  if (unknown.length > 0) throw new Error(`WORKER_QUEUES names unknown roles: ${unknown.join(', ')} (known: ${WORKER_ROLES.join(', ')})`);
  return roles as WorkerRole[];
}

export interface WorkerRuntime {
  /** Stops taking work, lets running jobs finish, closes its connections. */
  stop(): Promise<void>;
}

/** Starts the processors and the relay loop of the given roles inside this process. */
export async function startWorkerRuntime(services: Services, roles: readonly WorkerRole[]): Promise<WorkerRuntime> {
  const { config, logger } = services;
  const connections: Redis[] = [];
  const workers: Worker[] = [];
  const stoppers: (() => Promise<void>)[] = [];

  const startWorker = (queue: QueueName, processor: Processor, concurrency: number) => {
    // Workers block on Redis, so each gets its own connection without a retry limit (BullMQ requirement).
    const connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null, connectionName: `approval-gate:worker:${queue}` });
    connection.on('error', (error: Error) => logger.warn({ err: error, queue }, 'redis connection error'));
    connections.push(connection);
    const worker = new Worker(queue, processor, {
      connection,
      prefix: config.REDIS_PREFIX,
      concurrency,
      lockDuration: config.WORKER_LOCK_DURATION_MS,
      // A job whose worker died is taken over once its lock lapses, not 30 s later.
      stalledInterval: config.WORKER_LOCK_DURATION_MS,
    });
    worker.on('failed', (job, error) => logger.warn({ err: error, queue, jobId: job?.id, attempts: job?.attemptsMade }, 'job failed'));
    worker.on('error', (error) => logger.error({ err: error, queue }, 'worker error'));
    workers.push(worker);
  };

  // An attempt holds its endpoint slot for at most the 15 s delivery deadline; the margin covers clock drift.
  const slots = new EndpointSlots(services.redis, config.REDIS_PREFIX, config.WEBHOOK_ENDPOINT_CONCURRENCY, 30_000);
  const deliveries = new DeliveryService(new DeliveryStore(services.db, services.sql), slots, services.jobs, logger, {
    allowPrivate: allowsPrivateWebhookUrls(config),
    backoffScale: config.WEBHOOK_BACKOFF_SCALE,
  });

  if (roles.includes(expiryJob.queue)) {
    startWorker(expiryJob.queue, createExpiryProcessor(services.approvals), 20);
  }
  if (roles.includes(webhookDeliveryJob.queue)) {
    startWorker(webhookDeliveryJob.queue, createWebhookDeliveryProcessor(deliveries), config.WEBHOOK_DELIVERY_CONCURRENCY);
  }
  if (roles.includes(emailJob.queue)) {
    const mailer = createMailer(config, logger);
    stoppers.push(async () => mailer.close());
    startWorker(emailJob.queue, createEmailProcessor({ db: services.db, mailer, logger }), 5);
  }
  if (roles.includes(auditExportJob.queue)) {
    // Each export holds a connection and streams to disk; two at a time keep the database responsive.
    startWorker(auditExportJob.queue, createAuditExportProcessor(services.audit), 2);
  }

  if (roles.includes(maintenanceJob.queue)) {
    const { maintenance } = services.jobs;
    // Upserting is idempotent: every worker process declares the same schedules.
    const schedules = [
      ['sweep-expired-approvals', config.EXPIRY_SWEEP_INTERVAL_MS],
      ['sweep-stalled-deliveries', config.DELIVERY_SWEEP_INTERVAL_MS],
    ] as const;
    const declareSchedules = async () => {
      for (const [task, every] of schedules) await maintenance.upsertJobScheduler(task, { every }, { name: task, data: { task } });
    };
    await declareSchedules();
    // Redis keeps nothing on disk: after it restarts empty, the schedules must be declared again.
    const redeclare = () => void declareSchedules().catch((error: unknown) => logger.warn({ err: error }, 'could not redeclare schedules'));
    services.redis.on('ready', redeclare);
    stoppers.push(async () => void services.redis.off('ready', redeclare));
    startWorker(maintenanceJob.queue, createMaintenanceProcessor({ approvals: services.approvals, deliveries }), 1);
  }

  if (roles.includes('outbox-relay')) {
    const relay = new OutboxRelay(new OutboxStore(services.db), services.jobs, logger, {
      batchSize: 200,
      pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
      leaseMs: 30_000,
    });
    const subscriber = createRedisSubscriber(config.REDIS_URL, 'outbox-relay', logger);
    connections.push(subscriber);
    await services.outboxSignal
      .listen(subscriber, () => relay.signal())
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'outbox relay not subscribed; polling only');
      });
    const stop = new AbortController();
    const running = relay.run(stop.signal);
    stoppers.push(async () => {
      stop.abort();
      await running;
    });
  }

  logger.info({ roles }, 'worker started');
  return {
    async stop() {
      await Promise.all([...workers.map((worker) => worker.close()), ...stoppers.map((stop) => stop())]);
      await Promise.all(connections.map(closeRedis));
    },
  };
}
