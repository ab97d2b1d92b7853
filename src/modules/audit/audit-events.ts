import { randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { KeyOwner } from '../orgs/key-owner-schema.js';
import type { ReceiptFacts, SignedReceipt } from './receipt-signing.js';

/** Every audit event type (see docs/audit.md). */
export const AUDIT_EVENT_TYPES = [
  'approval.created',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.orphaned',
  'policy.updated',
  'policy.deleted',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'member.created',
  'member.updated',
  'member.removed',
  'key.created',
  'key.revoked',
  'key.attributed',
  'approval.vote_recorded',
  'integration.updated',
  'integration.removed',
  'approval.changes_requested',
  'approval.revised',
  'standing_approval.revoked',
  'approval.stage_completed',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** The approval webhook event types (see docs/webhooks.md); each is also an audit event type. */
export const APPROVAL_WEBHOOK_TYPES = [
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.orphaned',
  'approval.changes_requested',
  'approval.revised',
] as const satisfies readonly AuditEventType[];
export type ApprovalWebhookType = (typeof APPROVAL_WEBHOOK_TYPES)[number];

/** A signed checkpoint of the audit chain (see docs/audit.md): a domain event, not an audit event. */
export const CHECKPOINT_EVENT_TYPE = 'audit.checkpoint';

/** Every type a webhook endpoint can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [...APPROVAL_WEBHOOK_TYPES, CHECKPOINT_EVENT_TYPE] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What the outbox carries: every audit event type, and checkpoints. */
export type DomainEventType = AuditEventType | typeof CHECKPOINT_EVENT_TYPE;

export const GENESIS_HASH = '0'.repeat(64);

/**
 * Who caused an event: an API key (with the owner of a key made with POST /v1/keys), a member, or
 * the system: a worker acting on its own schedule, or an operator through the CLI (`cli`, and
 * `demo-seed` for the demo of npm run dev). A member's email and a key's owner are shown in `decidedBy`
 * but are not part of the audited actor.
 */
export type Actor =
  { type: 'api_key'; id: string; owner?: KeyOwner } | { type: 'user'; id: string; email: string } | { type: 'system'; id: string };

/** The body POSTed to webhook endpoints (see docs/webhooks.md), fixed when the state change commits. */
export interface WebhookEventBody {
  id: string;
  type: ApprovalWebhookType;
  createdAt: string;
  data: {
    approvalId: string;
    status: string;
    verdict: string | null;
    action: string;
    payload: unknown;
    feedback: string | null;
    agent: string | null;
    policyKey: string;
    /** The policy version the approval was evaluated under (null for an orphan); absent on events committed before versions. */
    policyVersion?: number | null;
    payloadHash: string;
    /** Who approved or rejected (see docs/api.md); null for expiry, escalation and orphan events. */
    decidedBy: { type: string; id: string; email?: string; owner?: KeyOwner } | null;
    escalatedTo?: string;
    /** The revision the event is about: 1 for the original (see docs/api.md#revisions); absent on events committed before revisions. */
    revision?: number;
    /** approval.changes_requested: the payload the reviewer suggested, or null. */
    suggestedPayload?: unknown;
    /** The stage the approval was in (docs/policies.md#stages); null without stages, absent on events committed before stages. */
    stage?: { index: number; name: string } | null;
    /** approval.revised: the requester's note, or null. */
    note?: string | null;
    /**
     * The signed receipt of a settlement (docs/receipts.md), null on other events; committed as
     * its facts, signed as it is delivered. Absent on events committed before receipts.
     */
    receipt?: SignedReceipt | ReceiptFacts | null;
  };
}

/**
 * An event to append to an organization's chain. `seq`, `prevHash` and `hash` are assigned by
 * the database while it holds the chain head, see prisma/functions/ag_append_audit_events.sql.
 */
export interface AuditEventDraft {
  type: AuditEventType;
  actor: Actor;
  data: Record<string, unknown> & { action?: string; agent?: string | null };
  createdAt: Date;
  /** Present when the event is also a webhook: it is written to the outbox with the event. */
  webhook?: WebhookEventBody;
}

/** The shape the append function receives: the canonical bytes are produced here, once. */
export interface SerializedAuditEvent {
  /** The id of the domain event it is published as; a webhook's event id. */
  id: string;
  type: AuditEventType;
  actor: string;
  data: string;
  action: string | null;
  agent: string | null;
  createdAt: string;
  webhook?: WebhookEventBody;
}

export function serializeActor(actor: Actor): string {
  return JSON.stringify({ type: actor.type, id: actor.id });
}

/** RFC 8785 (JCS) canonical JSON. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

export function serializeAuditEvent(event: AuditEventDraft): SerializedAuditEvent {
  return {
    id: event.webhook?.id ?? randomUUID(),
    type: event.type,
    actor: serializeActor(event.actor),
    data: canonicalJson(event.data),
    action: event.data.action ?? null,
    agent: event.data.agent ?? null,
    createdAt: event.createdAt.toISOString(),
    ...(event.webhook ? { webhook: event.webhook } : {}),
  };
}
