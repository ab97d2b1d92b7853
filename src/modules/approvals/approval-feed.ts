import type { Redis } from 'ioredis';
import { pickColumns, selectList, type ColumnMap, type PgRow } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import type { AuditEvent } from '../../generated/prisma/client.js';
import type { Logger } from '../../lib/logger.js';
import { subscribeWithin } from '../../lib/redis.js';
import { AUDIT_EVENT_COLUMNS } from '../audit/audit-columns.js';
import { CHECKPOINT_EVENT_TYPE, type AuditEventType } from '../audit/audit-events.js';
import type { DomainEvent } from '../outbox/domain-events.js';
import type { Tenant } from '../orgs/tenant.js';
import type { ApprovalStatus } from './approval-schemas.js';

/** What the console hears of an approval's life: enough to know what to show again. */
export interface ApprovalFeedEvent {
  type: AuditEventType;
  approvalId: string;
  status: ApprovalStatus;
  /** Its place in the organization's audit chain: the stream's event id, and where a reconnect resumes. */
  seq: number;
}

export const APPROVAL_FEED_TYPES = [
  'approval.created',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.orphaned',
  'approval.vote_recorded',
  'approval.changes_requested',
  'approval.revised',
] as const satisfies readonly AuditEventType[];

/** An event replayed to a console that reconnects. */
type MissedEventRow = PgRow<Pick<AuditEvent, 'seq' | 'data'>> & { type: AuditEventType };
const MISSED_EVENT_COLUMNS = selectList(pickColumns(AUDIT_EVENT_COLUMNS, ['seq', 'type', 'data']) satisfies ColumnMap<MissedEventRow>);

/** More missed events than this on a reconnect: the client is told to read the state afresh instead. */
const REPLAY_LIMIT = 500;

/** The status an approval event leaves its approval in. */
function statusAfter(type: AuditEventType, data: Record<string, unknown>): ApprovalStatus {
  switch (type) {
    case 'approval.approved':
      return 'approved';
    case 'approval.rejected':
      return 'rejected';
    case 'approval.expired':
      return 'expired';
    case 'approval.escalated':
      return 'escalated';
    case 'approval.changes_requested':
      return 'changes_requested';
    case 'approval.created':
    case 'approval.revised':
      return (data.status as ApprovalStatus | undefined) ?? (data.outcome === 'allow' ? 'approved' : 'pending');
    default:
      return 'pending';
  }
}

function feedEvent(type: AuditEventType, seq: number, data: Record<string, unknown>): ApprovalFeedEvent {
  return { type, approvalId: String(data.approvalId), status: statusAfter(type, data), seq };
}

/** A message of the stream: an event, or `reset` when too much was missed to replay it. */
export type FeedMessage = { kind: 'event'; event: ApprovalFeedEvent } | { kind: 'reset' };

/**
 * The live feed of approval events that the console's inbox follows. A consumer of the outbox
 * relay publishes every committed approval event on one Redis channel; each web process holds one
 * subscription and hands the events of an organization to its open streams. Nothing here is
 * needed for correctness: a stream that reconnects with the last seq it saw is replayed what it
 * missed from the audit chain, which is the durable log of the same events.
 */
export class ApprovalFeed {
  private readonly channel: string;
  private readonly listeners = new Map<string, Set<(event: ApprovalFeedEvent | null) => void>>();
  private closed = false;

  constructor(
    private readonly sql: Sql,
    private readonly publisher: Redis,
    private readonly subscriber: Redis | null,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:approvals:feed`;
    this.subscriber?.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      // `<orgId> <json>`: organizations without open streams here cost no parsing.
      const listeners = this.listeners.get(message.slice(0, 36));
      if (!listeners) return;
      const event = JSON.parse(message.slice(37)) as ApprovalFeedEvent;
      for (const listener of listeners) listener(event);
    });
  }

  async start(timeoutMs = 2000): Promise<void> {
    if (this.subscriber && !(await subscribeWithin(this.subscriber, this.channel, timeoutMs, this.logger))) {
      this.logger.warn('approval feed not subscribed yet; open consoles catch up when it is');
    }
  }

  /** Publishes committed approval events; the relay retries the batch if Redis refuses. */
  async publish(events: readonly DomainEvent[]): Promise<void> {
    // Approval events are audit events, so each has its seq.
    const messages = events.flatMap((event) =>
      event.seq === null || event.type === CHECKPOINT_EVENT_TYPE
        ? []
        : [`${event.orgId} ${JSON.stringify(feedEvent(event.type, event.seq, event.data))}`],
    );
    if (messages.length === 0) return;
    const pipeline = this.publisher.pipeline();
    for (const message of messages) pipeline.publish(this.channel, message);
    await pipeline.exec();
  }

  /**
   * The organization's approval events from now on, after replaying those with a seq above
   * `after` (a reconnect's Last-Event-ID). Ends when `signal` aborts.
   */
  async *stream(tenant: Pick<Tenant, 'orgId'>, after: number | null, signal: AbortSignal): AsyncGenerator<FeedMessage> {
    const pending: ApprovalFeedEvent[] = [];
    let wake: (() => void) | null = null;
    // null: the process is shutting down.
    const listener = (event: ApprovalFeedEvent | null) => {
      if (event) pending.push(event);
      wake?.();
    };
    const onAbort = () => wake?.();
    let listeners = this.listeners.get(tenant.orgId);
    if (!listeners) this.listeners.set(tenant.orgId, (listeners = new Set()));
    // Listening before replaying: an event committed in between is then in `pending`, not lost.
    listeners.add(listener);
    signal.addEventListener('abort', onAbort);
    try {
      let lastSeq = after ?? 0;
      if (after !== null) {
        const missed = await this.missedSince(tenant.orgId, after);
        if (missed.length > REPLAY_LIMIT) yield { kind: 'reset' };
        else for (const event of missed) yield { kind: 'event', event };
        lastSeq = Math.max(lastSeq, ...missed.map((event) => event.seq));
      }
      while (!signal.aborted && !this.closed) {
        if (pending.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        for (const event of pending.splice(0)) {
          if (event.seq <= lastSeq) continue;
          lastSeq = event.seq;
          yield { kind: 'event', event };
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      listeners.delete(listener);
      if (listeners.size === 0 && this.listeners.get(tenant.orgId) === listeners) this.listeners.delete(tenant.orgId);
    }
  }

  /** For a prompt graceful shutdown: every open stream ends now (browsers reconnect elsewhere and resume). */
  close(): void {
    this.closed = true;
    for (const listeners of this.listeners.values()) for (const listener of listeners) listener(null);
  }

  private async missedSince(orgId: string, after: number): Promise<ApprovalFeedEvent[]> {
    const rows = await this.sql.query<MissedEventRow>(
      'approval-feed-replay',
      `SELECT ${MISSED_EVENT_COLUMNS} FROM audit_events
       WHERE org_id = $1 AND seq > $2 AND type = ANY ($3::text[]) ORDER BY seq LIMIT $4`,
      [orgId, after, APPROVAL_FEED_TYPES, REPLAY_LIMIT + 1],
    );
    return rows.map((row) => feedEvent(row.type, Number(row.seq), JSON.parse(row.data) as Record<string, unknown>));
  }
}
