import { z } from 'zod';

/**
 * Every queue, its job payload and its job options, defined once and imported by both the
 * producers (API, relay, workers) and the processors in workers/. Payloads carry ids only:
 * processors re-read the rows and re-check their state, so a stale or repeated job is harmless.
 */
export const expiryJob = {
  queue: 'approval-expiry',
  payload: z.object({ orgId: z.uuid(), approvalId: z.uuid() }),
  /** Deterministic, so a job scheduled twice (API and sweeper) exists once. */
  jobId: (approvalId: string) => `expire-${approvalId}`,
} as const;
export type ExpiryJob = z.infer<typeof expiryJob.payload>;

export const webhookDeliveryJob = {
  queue: 'webhook-delivery',
  payload: z.object({ deliveryId: z.uuid(), attempt: z.number().int().min(1) }),
  /** One job per attempt; the attempt number in the id lets a sweeper re-create a lost one safely. */
  jobId: (deliveryId: string, attempt: number) => `${deliveryId}-${attempt}`,
} as const;
export type WebhookDeliveryJob = z.infer<typeof webhookDeliveryJob.payload>;

const emailPayload = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('approval-orphaned'), orgId: z.uuid(), approvalId: z.uuid(), eventId: z.uuid() }),
  z.object({ kind: z.literal('endpoint-disabled'), orgId: z.uuid(), endpointId: z.uuid(), reason: z.string() }),
]);
export type EmailJob = z.infer<typeof emailPayload>;

export const emailJob = {
  queue: 'email',
  payload: emailPayload,
  jobId: (payload: EmailJob) =>
    payload.kind === 'approval-orphaned' ? `orphan-${payload.eventId}` : `disabled-${payload.endpointId}-${Date.now()}`,
} as const;

export const maintenanceJob = {
  queue: 'maintenance',
  payload: z.object({ task: z.enum(['sweep-expired-approvals', 'sweep-stalled-deliveries']) }),
} as const;
export type MaintenanceJob = z.infer<typeof maintenanceJob.payload>;

export const auditExportJob = {
  queue: 'audit-export',
  payload: z.object({ orgId: z.uuid(), exportId: z.uuid() }),
  jobId: (exportId: string) => `audit-export-${exportId}`,
} as const;
export type AuditExportJob = z.infer<typeof auditExportJob.payload>;

export const QUEUE_NAMES = [expiryJob.queue, webhookDeliveryJob.queue, emailJob.queue, maintenanceJob.queue, auditExportJob.queue] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/** Completed jobs are kept a while for Bull Board, failed ones longer for inspection. */
export const retention = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;
