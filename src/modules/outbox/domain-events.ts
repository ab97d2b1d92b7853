import type { Actor, DomainEventType } from '../audit/audit-events.js';

/**
 * What happened, as the consumers of src/consumers/ see it. Every audit event is a domain event,
 * written to the outbox in the transaction of the change it records; `seq` is its place in the
 * organization's audit chain. An event outside the chain (a signed checkpoint, say) has no seq
 * and no actor.
 */
export interface DomainEvent {
  id: string;
  type: DomainEventType;
  orgId: string;
  seq: number | null;
  actor: Actor | null;
  createdAt: Date;
  /** The audit event's data: what changed, and the ids of what it changed (see docs/audit.md). */
  data: Record<string, unknown>;
}
