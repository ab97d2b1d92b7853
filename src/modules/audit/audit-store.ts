import type { DatabaseClient } from '../../data/database.js';
import { serializeAuditEvent, type AuditEventDraft } from './audit-events.js';

/** JSON argument for the write functions of the migrations: events with their canonical bytes. */
export function auditEventsArgument(events: AuditEventDraft[]): string {
  return JSON.stringify(events.map(serializeAuditEvent));
}

/**
 * Appends events to the organization's chain inside the caller's transaction, for state changes
 * that are plain Prisma writes (policies, webhooks). Returns the new head seq.
 */
export async function appendAuditEvents(db: DatabaseClient, orgId: string, events: AuditEventDraft[]): Promise<bigint> {
  const [row] = await db.$queryRaw<{ seq: bigint }[]>`
    SELECT ag_append_audit_events(${orgId}::uuid, ${auditEventsArgument(events)}::jsonb) AS seq`;
  return row!.seq;
}
