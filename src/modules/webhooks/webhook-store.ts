import { pickColumns, selectList } from '../../data/columns.js';
import type { Database } from '../../data/database.js';
import { Prisma, type WebhookAttempt, type WebhookDelivery, type WebhookEndpoint } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import { WEBHOOK_ENDPOINT_COLUMNS } from './webhook-columns.js';

export type { WebhookEndpoint };
export type NewWebhookEndpoint = Pick<WebhookEndpoint, 'id' | 'url' | 'events' | 'secret'>;
export type WebhookEndpointChanges = Partial<Pick<WebhookEndpoint, 'url' | 'events' | 'enabled' | 'disabledReason' | 'failingSince'>>;
export type DeliveryWithAttempts = WebhookDelivery & { attempts: WebhookAttempt[] };

const DELETED_URL = Prisma.raw(selectList(pickColumns(WEBHOOK_ENDPOINT_COLUMNS, ['url'])));

const withAttempts = { attempts: { orderBy: [{ attemptedAt: 'asc' }, { id: 'asc' }] } } satisfies Prisma.WebhookDeliveryInclude;

/** Webhook endpoints and their deliveries of one organization; every query is scoped to it. */
export class WebhookStore {
  constructor(
    private readonly db: Database,
    private readonly orgId: string,
  ) {}

  find(id: string): Promise<WebhookEndpoint | null> {
    return this.db.webhookEndpoint.findFirst({ where: { id, orgId: this.orgId } });
  }

  list(): Promise<WebhookEndpoint[]> {
    return this.db.webhookEndpoint.findMany({ where: { orgId: this.orgId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  }

  /** Inserts the endpoint and appends its audit event in one transaction. */
  create(endpoint: NewWebhookEndpoint, event: AuditEventDraft): Promise<WebhookEndpoint> {
    return this.db.$transaction(async (tx) => {
      const created = await tx.webhookEndpoint.create({
        data: { ...endpoint, orgId: this.orgId, createdAt: event.createdAt, updatedAt: event.createdAt },
      });
      await appendAuditEvents(tx, this.orgId, [event]);
      return created;
    });
  }

  /** Applies the changes with their audit event; null when the endpoint is not in this organization. */
  update(id: string, changes: WebhookEndpointChanges, event: AuditEventDraft): Promise<WebhookEndpoint | null> {
    return this.db.$transaction(async (tx) => {
      const [updated] = await tx.webhookEndpoint.updateManyAndReturn({
        where: { id, orgId: this.orgId },
        data: { ...changes, updatedAt: event.createdAt },
      });
      if (!updated) return null;
      await appendAuditEvents(tx, this.orgId, [event]);
      return updated;
    });
  }

  /**
   * Replaces the secret and keeps the replaced one until `previousSecretExpiresAt`. One statement
   * reads and writes it, so each of two concurrent rotations keeps the secret it actually replaced.
   */
  rotateSecret(id: string, secret: string, previousSecretExpiresAt: Date, event: AuditEventDraft): Promise<WebhookEndpoint | null> {
    return this.db.$transaction(async (tx) => {
      const rotated = await tx.$executeRaw`
        UPDATE webhook_endpoints
        SET previous_secret = secret, secret = ${secret}, previous_secret_expires_at = ${previousSecretExpiresAt}, updated_at = ${event.createdAt}
        WHERE id = ${id}::uuid AND org_id = ${this.orgId}::uuid`;
      if (rotated === 0) return null;
      await appendAuditEvents(tx, this.orgId, [event]);
      return tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    });
  }

  /**
   * Deletes the endpoint (its deliveries cascade) and appends the event built from the URL it had,
   * read by the same statement; false when there was none.
   */
  delete(id: string, event: (url: string) => AuditEventDraft): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const [deleted] = await tx.$queryRaw<Pick<WebhookEndpoint, 'url'>[]>`
        DELETE FROM webhook_endpoints WHERE id = ${id}::uuid AND org_id = ${this.orgId}::uuid RETURNING ${DELETED_URL}`;
      if (!deleted) return false;
      await appendAuditEvents(tx, this.orgId, [event(deleted.url)]);
      return true;
    });
  }

  listDeliveries(endpointId: string, limit: number): Promise<DeliveryWithAttempts[]> {
    return this.db.webhookDelivery.findMany({
      where: { endpointId, orgId: this.orgId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit,
      include: withAttempts,
    });
  }

  findDelivery(endpointId: string, deliveryId: string): Promise<DeliveryWithAttempts | null> {
    return this.db.webhookDelivery.findFirst({ where: { id: deliveryId, endpointId, orgId: this.orgId }, include: withAttempts });
  }

  /** Makes the delivery pending and due at `now`, whatever state it was in. */
  async redeliver(deliveryId: string, now: Date): Promise<void> {
    await this.db.webhookDelivery.updateMany({
      where: { id: deliveryId, orgId: this.orgId },
      data: { status: 'pending', nextAttemptAt: now, completedAt: null },
    });
  }
}
