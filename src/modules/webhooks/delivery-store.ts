import type { Database } from '../../data/database.js';
import type { Actor } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';

/** Everything one attempt needs, read fresh for every attempt (jobs carry ids only). */
export interface AttemptTarget {
  deliveryId: string;
  orgId: string;
  status: 'pending' | 'succeeded' | 'failed';
  attemptCount: number;
  eventId: string;
  /** The webhook body as committed with the state change. */
  body: unknown;
  endpoint: {
    id: string;
    url: string;
    enabled: boolean;
    failingSince: Date | null;
    /** Newest first: the current secret, then the previous one while its grace period lasts. */
    secrets: string[];
  };
}

export interface AttemptRecord {
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}

/** How an attempt leaves the delivery and its endpoint. */
export type AttemptResolution =
  { kind: 'succeeded' } | { kind: 'retry'; nextAttemptAt: Date } | { kind: 'failed' } | { kind: 'endpoint-disabled'; reason: string };

/** Webhook deliveries and their attempt log: the retry state lives here, not only in Redis. */
export class DeliveryStore {
  constructor(private readonly db: Database) {}

  async loadTarget(deliveryId: string, now: Date): Promise<AttemptTarget | null> {
    const delivery = await this.db.webhookDelivery.findUnique({
      where: { id: deliveryId },
      include: { endpoint: true, event: { select: { body: true } } },
    });
    if (!delivery) return null;
    const { endpoint } = delivery;
    const previousActive = endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now;
    return {
      deliveryId: delivery.id,
      orgId: delivery.orgId,
      status: delivery.status,
      attemptCount: delivery.attemptCount,
      eventId: delivery.eventId,
      body: delivery.event.body,
      endpoint: {
        id: endpoint.id,
        url: endpoint.url,
        enabled: endpoint.enabled,
        failingSince: endpoint.failingSince,
        secrets: previousActive ? [endpoint.secret, endpoint.previousSecret!] : [endpoint.secret],
      },
    };
  }

  /**
   * Records an attempt and its consequences in one transaction. Returns false, recording
   * nothing, when another worker already recorded this attempt (a job run twice after a lock
   * expired), so the attempt log and the counters never double-count.
   */
  recordAttempt(target: AttemptTarget, record: AttemptRecord, resolution: AttemptResolution, actor: Actor): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const { count } = await tx.webhookDelivery.updateMany({
        where: { id: target.deliveryId, status: 'pending', attemptCount: record.attempt - 1 },
        data: {
          attemptCount: record.attempt,
          status: resolution.kind === 'retry' ? 'pending' : resolution.kind === 'succeeded' ? 'succeeded' : 'failed',
          nextAttemptAt: resolution.kind === 'retry' ? resolution.nextAttemptAt : null,
          completedAt: resolution.kind === 'retry' ? null : record.attemptedAt,
        },
      });
      if (count === 0) return false;
      await tx.webhookAttempt.create({
        data: {
          deliveryId: target.deliveryId,
          attemptedAt: record.attemptedAt,
          durationMs: record.durationMs,
          statusCode: record.statusCode,
          error: record.error,
          responseBody: record.responseBody,
        },
      });

      const endpointId = target.endpoint.id;
      if (resolution.kind === 'succeeded') {
        if (target.endpoint.failingSince) await tx.webhookEndpoint.update({ where: { id: endpointId }, data: { failingSince: null } });
      } else if (resolution.kind === 'endpoint-disabled') {
        await tx.webhookEndpoint.update({
          where: { id: endpointId },
          data: { enabled: false, disabledReason: resolution.reason, failingSince: target.endpoint.failingSince ?? record.attemptedAt },
        });
        await appendAuditEvents(tx, target.orgId, [
          {
            type: 'webhook.updated',
            actor,
            createdAt: record.attemptedAt,
            data: { endpointId, url: target.endpoint.url, enabled: false, reason: resolution.reason },
          },
        ]);
      } else if (!target.endpoint.failingSince) {
        await tx.webhookEndpoint.update({ where: { id: endpointId }, data: { failingSince: record.attemptedAt } });
      }
      return true;
    });
  }

  /** Closes a delivery without an attempt: its endpoint was disabled meanwhile. */
  async abandon(deliveryId: string, at: Date): Promise<void> {
    await this.db.webhookDelivery.updateMany({
      where: { id: deliveryId, status: 'pending' },
      data: { status: 'failed', nextAttemptAt: null, completedAt: at },
    });
  }

  /** Pending deliveries whose next attempt is overdue by `graceMs`: their job was lost. */
  findStalled(graceMs: number, limit: number): Promise<{ id: string; attemptCount: number }[]> {
    return this.db.webhookDelivery.findMany({
      where: { status: 'pending', nextAttemptAt: { lte: new Date(Date.now() - graceMs) } },
      select: { id: true, attemptCount: true },
      orderBy: { nextAttemptAt: 'asc' },
      take: limit,
    });
  }
}
