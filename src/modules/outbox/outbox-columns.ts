import type { ColumnMap } from '../../data/columns.js';
import type { OutboxMessage } from '../../generated/prisma/client.js';

/** Every column of `outbox_messages`, read with raw SQL by the relay and the webhooks' fan-out; see ColumnMap. */
export const OUTBOX_MESSAGE_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  eventId: 'event_id',
  eventType: 'event_type',
  auditSeq: 'audit_seq',
  body: 'body',
  createdAt: 'created_at',
  relayedAt: 'relayed_at',
  claimedUntil: 'claimed_until',
} as const satisfies ColumnMap<OutboxMessage>;
