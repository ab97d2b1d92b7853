import { randomUUID } from 'node:crypto';
import type { Database } from '../../data/database.js';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { withTimeout } from '../../lib/time.js';
import { ENQUEUE_HINT_TIMEOUT_MS } from '../../lib/background-work.js';
import type { AuditEventDraft, AuditEventType, WebhookEventType } from '../audit/audit-events.js';
import type { Tenant } from '../orgs/tenant.js';
import type { DeliveryService } from './delivery-service.js';
import type {
  WebhookCreateInput,
  WebhookDeliveryView,
  WebhookEndpointView,
  WebhookEndpointWithSecret,
  WebhookUpdateInput,
} from './webhook-schemas.js';
import { generateWebhookSecret, type WebhookSecrets } from './webhook-secrets.js';
import { WebhookStore, type DeliveryWithAttempts, type WebhookEndpoint } from './webhook-store.js';
import { parseWebhookUrl, resolveWebhookHost, UnsafeWebhookUrlError } from './webhook-url-guard.js';

/** How long the replaced secret still signs deliveries after a rotation (see docs/webhooks.md). */
const PREVIOUS_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

export interface WebhookAfterCommit {
  deliveries: Pick<DeliveryService, 'deliverNow'>;
  logger: Logger;
}

export interface WebhookOptions {
  /** Whether URLs may resolve to loopback, private or link-local addresses (the SSRF guard). */
  allowPrivateUrls: boolean;
  /** How signing secrets are stored: sealed when SECRETS_ENCRYPTION_KEY is set. */
  secrets: WebhookSecrets;
}

export class WebhookService {
  constructor(
    private readonly db: Database,
    private readonly afterCommit: WebhookAfterCommit,
    private readonly options: WebhookOptions,
  ) {}

  private store(tenant: Tenant): WebhookStore {
    return new WebhookStore(this.db, tenant.orgId);
  }

  async create(tenant: Tenant, input: WebhookCreateInput): Promise<WebhookEndpointWithSecret> {
    await this.checkHost(input.url);
    const id = randomUUID();
    const secret = generateWebhookSecret();
    const endpoint = await this.store(tenant).create(
      { id, url: input.url, events: input.events, secret: this.options.secrets.toStored({ orgId: tenant.orgId, endpointId: id }, secret) },
      auditEvent(tenant, 'webhook.created', { endpointId: id, url: input.url, events: input.events, enabled: true }),
    );
    return withSecret(endpoint, secret);
  }

  async list(tenant: Tenant): Promise<WebhookEndpointView[]> {
    return (await this.store(tenant).list()).map(toEndpointView);
  }

  async get(tenant: Tenant, id: string): Promise<WebhookEndpointView> {
    return toEndpointView(await requireEndpoint(this.store(tenant), id));
  }

  async update(tenant: Tenant, id: string, patch: WebhookUpdateInput): Promise<WebhookEndpointView> {
    if (patch.url !== undefined) await this.checkHost(patch.url);
    // Re-enabling starts afresh: why the service disabled it and the failure streak no longer apply.
    const changes = patch.enabled ? { ...patch, disabledReason: null, failingSince: null } : patch;
    const endpoint = await this.store(tenant).update(id, changes, auditEvent(tenant, 'webhook.updated', { endpointId: id, ...patch }));
    if (!endpoint) throw endpointNotFound(id);
    return toEndpointView(endpoint);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const deleted = await this.store(tenant).delete(id, (url) => auditEvent(tenant, 'webhook.deleted', { endpointId: id, url }));
    if (!deleted) throw endpointNotFound(id);
  }

  async rotateSecret(tenant: Tenant, id: string): Promise<WebhookEndpointWithSecret> {
    const now = new Date();
    const previousSecretExpiresAt = new Date(now.getTime() + PREVIOUS_SECRET_GRACE_MS);
    const secret = generateWebhookSecret();
    const endpoint = await this.store(tenant).rotateSecret(
      id,
      this.options.secrets.toStored({ orgId: tenant.orgId, endpointId: id }, secret),
      previousSecretExpiresAt,
      auditEvent(tenant, 'webhook.secret_rotated', { endpointId: id, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() }, now),
    );
    if (!endpoint) throw endpointNotFound(id);
    return withSecret(endpoint, secret);
  }

  async listDeliveries(tenant: Tenant, endpointId: string, limit: number): Promise<WebhookDeliveryView[]> {
    const store = this.store(tenant);
    await requireEndpoint(store, endpointId);
    return (await store.listDeliveries(endpointId, limit)).map(toDeliveryView);
  }

  /** Makes a delivery due now, whatever its state, as the attempt after its last one. */
  async redeliver(tenant: Tenant, endpointId: string, deliveryId: string): Promise<WebhookDeliveryView> {
    const store = this.store(tenant);
    const endpoint = await requireEndpoint(store, endpointId);
    const delivery = await store.findDelivery(endpointId, deliveryId);
    if (!delivery) throw new NotFoundError(`No delivery with id '${deliveryId}' exists for webhook endpoint '${endpointId}'.`);
    if (!endpoint.enabled) throw new ConflictError(`Webhook endpoint ${endpointId} is disabled; enable it before redelivering.`);

    const now = new Date();
    await store.redeliver(deliveryId, now);
    const { deliveries, logger } = this.afterCommit;
    await withTimeout(deliveries.deliverNow(deliveryId, delivery.attemptCount + 1), ENQUEUE_HINT_TIMEOUT_MS, 'scheduling redelivery').catch(
      (error: unknown) => {
        logger.warn({ err: error, deliveryId }, 'could not schedule redelivery; the sweeper will send it');
      },
    );
    return toDeliveryView({ ...delivery, status: 'pending', nextAttemptAt: now, completedAt: null });
  }

  /** The SSRF guard's verdict on where the URL's host resolves, as a 422 on `url`. */
  private async checkHost(url: string): Promise<void> {
    try {
      await resolveWebhookHost(parseWebhookUrl(url), { allowPrivate: this.options.allowPrivateUrls });
    } catch (error) {
      if (error instanceof UnsafeWebhookUrlError) throw new ValidationError([{ path: 'url', message: `url ${error.message}` }]);
      throw error;
    }
  }
}

function auditEvent(tenant: Tenant, type: AuditEventType, data: Record<string, unknown>, createdAt = new Date()): AuditEventDraft {
  return { type, actor: tenant.actor, data, createdAt };
}

async function requireEndpoint(store: WebhookStore, id: string): Promise<WebhookEndpoint> {
  const endpoint = await store.find(id);
  if (!endpoint) throw endpointNotFound(id);
  return endpoint;
}

function endpointNotFound(id: string): NotFoundError {
  return new NotFoundError(`No webhook endpoint with id '${id}' exists.`);
}

function toEndpointView(endpoint: WebhookEndpoint): WebhookEndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events as WebhookEventType[],
    enabled: endpoint.enabled,
    createdAt: endpoint.createdAt.toISOString(),
  };
}

/** The view with the secret as made (the row holds it sealed when a key is set): shown once, never read back. */
function withSecret(endpoint: WebhookEndpoint, secret: string): WebhookEndpointWithSecret {
  return { ...toEndpointView(endpoint), secret };
}

function toDeliveryView(delivery: DeliveryWithAttempts): WebhookDeliveryView {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    eventType: delivery.eventType as WebhookEventType,
    status: delivery.status,
    attemptCount: delivery.attemptCount,
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
    completedAt: delivery.completedAt?.toISOString() ?? null,
    attempts: delivery.attempts.map((attempt) => ({
      attemptedAt: attempt.attemptedAt.toISOString(),
      statusCode: attempt.statusCode,
      durationMs: attempt.durationMs,
      error: attempt.error,
      responseBody: attempt.responseBody,
    })),
  };
}
