import type { ColumnMap } from '../../data/columns.js';
import type { WebhookDelivery, WebhookEndpoint } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const WEBHOOK_ENDPOINT_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  url: 'url',
  events: 'events',
  enabled: 'enabled',
  secret: 'secret',
  previousSecret: 'previous_secret',
  previousSecretExpiresAt: 'previous_secret_expires_at',
  disabledReason: 'disabled_reason',
  failingSince: 'failing_since',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as const satisfies ColumnMap<WebhookEndpoint>;

export const WEBHOOK_DELIVERY_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  endpointId: 'endpoint_id',
  eventId: 'event_id',
  eventType: 'event_type',
  status: 'status',
  attemptCount: 'attempt_count',
  nextAttemptAt: 'next_attempt_at',
  createdAt: 'created_at',
  completedAt: 'completed_at',
} as const satisfies ColumnMap<WebhookDelivery>;
