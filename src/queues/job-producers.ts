import { Queue, type ConnectionOptions } from 'bullmq';
import { Batcher } from '../lib/batcher.js';
import type { Logger } from '../lib/logger.js';
import {
  auditExportJob,
  emailJob,
  expiryJob,
  type ExpiryJob,
  maintenanceJob,
  retention,
  webhookDeliveryJob,
  type EmailJob,
} from './job-definitions.js';

/**
 * How long a request waits on Redis to enqueue work that a sweeper would also find in Postgres:
 * past it the request answers anyway, and the work starts late instead of never.
 */
export const ENQUEUE_HINT_TIMEOUT_MS = 250;

/** Typed ways to enqueue work, shared by the API and the workers. */
export class JobProducers {
  readonly expiry: Queue;
  readonly webhookDelivery: Queue;
  readonly email: Queue;
  readonly maintenance: Queue;
  readonly auditExport: Queue;

  constructor(connection: ConnectionOptions, prefix: string, logger: Logger) {
    const options = { connection, prefix, defaultJobOptions: retention };
    this.expiry = new Queue(expiryJob.queue, options);
    this.webhookDelivery = new Queue(webhookDeliveryJob.queue, options);
    this.email = new Queue(emailJob.queue, options);
    this.maintenance = new Queue(maintenanceJob.queue, options);
    this.auditExport = new Queue(auditExportJob.queue, options);
    for (const queue of [this.expiry, this.webhookDelivery, this.email, this.maintenance, this.auditExport]) {
      queue.on('error', (error) => logger.warn({ err: error, queue: queue.name }, 'queue error'));
    }
  }

  /** A delayed job that fires at `expiresAt`; processing an early or repeated one is harmless. */
  scheduleExpiry(orgId: string, approvalId: string, expiresAt: Date): Promise<void> {
    return this.expiries.add({ orgId, approvalId, expiresAt });
  }

  private readonly expiries = new Batcher<ExpiryJob & { expiresAt: Date }>(async (expiries) => {
    await this.expiry.addBulk(
      expiries.map(({ orgId, approvalId, expiresAt }) => ({
        name: 'expire',
        data: expiryJob.payload.parse({ orgId, approvalId }),
        opts: {
          jobId: expiryJob.jobId(approvalId),
          delay: Math.max(0, expiresAt.getTime() - Date.now()),
          attempts: 5,
          backoff: { type: 'exponential', delay: 1000 },
        },
      })),
    );
  });

  async scheduleDelivery(deliveryId: string, attempt: number, delayMs: number): Promise<void> {
    await this.webhookDelivery.add(
      'deliver',
      webhookDeliveryJob.payload.parse({ deliveryId, attempt }),
      // Attempts here cover our own failures (database away); the receiver's are retried by the processor's schedule.
      {
        jobId: webhookDeliveryJob.jobId(deliveryId, attempt),
        delay: Math.max(0, delayMs),
        attempts: 5,
        backoff: { type: 'exponential', delay: 1000 },
      },
    );
  }

  /**
   * Runs the attempt now, also when its job already waits as a delayed retry (same job id, so
   * adding alone would change nothing): for redelivery and for the stalled-delivery sweeper.
   */
  async deliverNow(deliveryId: string, attempt: number): Promise<void> {
    await this.scheduleDelivery(deliveryId, attempt, 0);
    const job = await this.webhookDelivery.getJob(webhookDeliveryJob.jobId(deliveryId, attempt));
    if (job && (await job.isDelayed())) await job.promote();
  }

  async sendEmail(payload: EmailJob): Promise<void> {
    await this.email.add(payload.kind, emailJob.payload.parse(payload), {
      jobId: emailJob.jobId(payload),
      attempts: 8,
      backoff: { type: 'exponential', delay: 5000 },
    });
  }

  async exportAudit(orgId: string, exportId: string): Promise<void> {
    await this.auditExport.add('export', auditExportJob.payload.parse({ orgId, exportId }), {
      jobId: auditExportJob.jobId(exportId),
      attempts: 3,
      backoff: { type: 'exponential', delay: 5000 },
    });
  }

  async close(): Promise<void> {
    await Promise.all([
      this.expiry.close(),
      this.webhookDelivery.close(),
      this.email.close(),
      this.maintenance.close(),
      this.auditExport.close(),
    ]);
  }
}
