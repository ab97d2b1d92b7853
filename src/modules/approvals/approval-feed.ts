import type { Sql } from '../../data/database.js';
import type { Logger } from '../../lib/logger.js';
import { Semaphore } from '../../lib/semaphore.js';
import { SeqWindow } from '../../lib/seq-window.js';
import { execPipeline, subscribeWithin, type RedisClient } from '../../lib/redis.js';
import { CHECKPOINT_EVENT_TYPE, type AuditEventType } from '../audit/audit-events.js';
import type { DomainEvent } from '../outbox/domain-events.js';
import type { Tenant } from '../orgs/tenant.js';
import type { ApprovalStatus } from './approval-schemas.js';
import { FeedStreamSlots } from './feed-stream-slots.js';

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
  'approval.stage_completed',
] as const satisfies readonly AuditEventType[];

/**
 * A reconnect is replayed at most this many of the organization's feed events after its
 * Last-Event-ID; an older id is told to read the state afresh (`reset`). See docs/api.md.
 */
export const REPLAY_LIMIT = 1000;

/** Replayed events are read this many at a time: a replaying stream holds one page, not its whole replay. */
const REPLAY_PAGE = 200;

/**
 * Replay reads of one process running at once. Many streams replaying together (every console of
 * an organization reconnecting after a deploy) then take turns on a few connections of the pool
 * instead of taking all of it from other requests.
 */
const REPLAY_READS_AT_ONCE = 4;

/**
 * Live events held for a stream whose client is not reading them. Past this the stream drops them
 * and catches up from the audit chain once its client reads again, as a reconnect would.
 */
const LIVE_BUFFER = 1000;

/** How far below the highest seq it sent a stream remembers what it sent, to tell a late event from one it sent already. */
const SENT_REMEMBERED = 4096;

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
    case 'approval.stage_completed':
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
  private readonly replayReads = new Semaphore(REPLAY_READS_AT_ONCE);
  /** The limit on open streams per principal, which a stream takes before it opens. */
  readonly streamSlots: FeedStreamSlots;
  private closed = false;

  constructor(
    private readonly sql: Sql,
    private readonly publisher: RedisClient,
    private readonly subscriber: RedisClient | null,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:approvals:feed`;
    this.streamSlots = new FeedStreamSlots(publisher, prefix, logger);
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
    // A failed publish fails the relay's batch, which publishes it again: a console may hear an event twice, never not at all.
    await execPipeline(pipeline);
  }

  /**
   * The organization's approval events from now on, after replaying those with a seq above
   * `after` (a reconnect's Last-Event-ID), or `reset` when more than REPLAY_LIMIT were missed.
   * Ends when `signal` aborts. What a stream holds is bounded: one page of replay, and at most
   * LIVE_BUFFER live events while its client is slow (then it catches up from the database).
   */
  async *stream(tenant: Pick<Tenant, 'orgId'>, after: number | null, signal: AbortSignal): AsyncGenerator<FeedMessage> {
    const pending: ApprovalFeedEvent[] = [];
    let overflowed = false;
    let wake: (() => void) | null = null;
    // null: the process is shutting down.
    const listener = (event: ApprovalFeedEvent | null) => {
      if (event && pending.length < LIVE_BUFFER) pending.push(event);
      else if (event) overflowed = true;
      wake?.();
    };
    const onAbort = () => wake?.();
    let listeners = this.listeners.get(tenant.orgId);
    if (!listeners) this.listeners.set(tenant.orgId, (listeners = new Set()));
    // Listening before replaying: an event committed in between is then in `pending`, not lost.
    listeners.add(listener);
    signal.addEventListener('abort', onAbort);
    try {
      // Relays publish side by side (the passes of one relay, the relays of several workers), so an
      // event may arrive after one with a higher seq: a stream skips what it sent, and what its
      // client already had (up to `known`), not whatever is below the highest seq it sent.
      let known = after;
      let lastSeq = after;
      const sent = new SeqWindow(SENT_REMEMBERED);
      const send = (event: ApprovalFeedEvent): FeedMessage => {
        sent.add(event.seq);
        lastSeq = Math.max(lastSeq ?? event.seq, event.seq);
        return { kind: 'event', event };
      };
      let catchUp = after !== null;
      while (!signal.aborted && !this.closed) {
        if (catchUp) {
          catchUp = false;
          const from = lastSeq!;
          const missed = await this.missedSince(tenant.orgId, from, signal);
          if (signal.aborted) break;
          if (missed.tooMany) {
            yield { kind: 'reset' };
            // The client reads the state afresh: only what commits after this head is news to it.
            known = lastSeq = missed.head;
          } else {
            for await (const event of this.replay(tenant.orgId, from, signal)) {
              if (!sent.has(event.seq)) yield send(event);
            }
          }
          continue;
        }
        if (pending.length === 0 && !overflowed) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        if (overflowed) {
          overflowed = false;
          lastSeq ??= pending[0]!.seq - 1;
          pending.length = 0;
          catchUp = true;
          continue;
        }
        for (const event of pending.splice(0)) {
          if ((known !== null && event.seq <= known) || sent.has(event.seq)) continue;
          yield send(event);
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

  /** Whether more than REPLAY_LIMIT feed events follow `after`, and the newest one's seq if so. */
  private async missedSince(
    orgId: string,
    after: number,
    signal: AbortSignal,
  ): Promise<{ tooMany: false } | { tooMany: true; head: number }> {
    const [row] = await this.replayRead(signal, () =>
      this.sql.query<{ missed: string; head: string | null }>(
        'approval-feed-missed',
        `SELECT count(*) AS missed,
                CASE WHEN count(*) > $4 THEN (SELECT max(seq) FROM audit_events WHERE org_id = $1 AND type = ANY ($3::text[])) END AS head
         FROM (SELECT 1 FROM audit_events WHERE org_id = $1 AND seq > $2 AND type = ANY ($3::text[]) LIMIT $4 + 1) AS missed`,
        [orgId, after, APPROVAL_FEED_TYPES, REPLAY_LIMIT],
      ),
    );
    return row && Number(row.missed) > REPLAY_LIMIT ? { tooMany: true, head: Number(row.head) } : { tooMany: false };
  }

  /** A replay read in its turn; none once the stream has ended while it waited (its client left). */
  private replayRead<Row>(signal: AbortSignal, read: () => Promise<Row[]>): Promise<Row[]> {
    return this.replayReads.run(async () => (signal.aborted ? [] : read()));
  }

  /**
   * The feed events after `after`, read a page at a time as the stream takes them. The database
   * reads from the canonical JSON only the fields the feed shows, so a large payload is neither
   * sent over nor parsed here.
   */
  private async *replay(orgId: string, after: number, signal: AbortSignal): AsyncGenerator<ApprovalFeedEvent> {
    let from = after;
    while (!signal.aborted) {
      const rows = await this.replayRead(signal, () =>
        this.sql.query<{ seq: string; type: AuditEventType; approval_id: string; status: string | null; outcome: string | null }>(
          'approval-feed-replay',
          `SELECT e.seq, e.type, d.data ->> 'approvalId' AS approval_id, d.data ->> 'status' AS status, d.data ->> 'outcome' AS outcome
           FROM audit_events e CROSS JOIN LATERAL (SELECT e.data::jsonb AS data) AS d
           WHERE e.org_id = $1 AND e.seq > $2 AND e.type = ANY ($3::text[]) ORDER BY e.seq LIMIT $4`,
          [orgId, from, APPROVAL_FEED_TYPES, REPLAY_PAGE],
        ),
      );
      for (const row of rows) {
        const data = { approvalId: row.approval_id, ...(row.status === null ? {} : { status: row.status }), outcome: row.outcome };
        yield feedEvent(row.type, Number(row.seq), data);
      }
      if (rows.length < REPLAY_PAGE) return;
      from = Number(rows.at(-1)!.seq);
    }
  }
}
