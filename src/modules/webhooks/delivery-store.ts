import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, Sql } from '../../data/database.js';
import type { WebhookDelivery } from '../../generated/prisma/client.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { serializeAuditEvent, type Actor, type SerializedAuditEvent } from '../audit/audit-events.js';
import { OUTBOX_MESSAGE_COLUMNS } from '../outbox/outbox-columns.js';
import { WEBHOOK_DELIVERY_COLUMNS, WEBHOOK_ENDPOINT_COLUMNS } from './webhook-columns.js';

/** Everything one attempt needs, read fresh for every attempt (jobs carry ids only). */
export interface AttemptTarget {
  deliveryId: string;
  orgId: string;
  status: 'pending' | 'succeeded' | 'failed';
  attemptCount: number;
  eventId: string;
  /** The webhook body as committed with the state change: the bytes every attempt sends, its receipt signed. */
  rawBody: string;
  /** The audit event the webhook is (null for checkpoints), whose seq a settlement's receipt names. */
  auditSeq: number | null;
  endpoint: {
    id: string;
    url: string;
    enabled: boolean;
    failingSince: Date | null;
    /**
     * Newest first: the current secret, then the previous one while its grace period lasts; as
     * stored (sealed when SECRETS_ENCRYPTION_KEY is set), opened only to sign.
     */
    storedSecrets: string[];
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

export type PendingDelivery = Pick<WebhookDelivery, 'id' | 'attemptCount'>;

/** How an attempt leaves the delivery and its endpoint. */
export type AttemptResolution =
  { kind: 'succeeded' } | { kind: 'retry'; nextAttemptAt: Date } | { kind: 'failed' } | { kind: 'endpoint-disabled'; reason: string };

/** One element of ag_record_delivery_attempts' argument. */
interface AttemptRow extends AttemptRecord {
  deliveryId: string;
  resolution: AttemptResolution['kind'];
  nextAttemptAt: Date | null;
  disableReason: string | null;
  auditEvents: SerializedAuditEvent[];
}

interface TargetRow {
  deliveryId: string;
  orgId: string;
  status: AttemptTarget['status'];
  attemptCount: number;
  eventId: string;
  rawBody: string;
  auditSeq: string | null;
  endpointId: string;
  url: string;
  enabled: boolean;
  failingSince: Date | null;
  secret: string;
  previousSecret: string | null;
}

const PENDING_COLUMNS = selectList(pickColumns(WEBHOOK_DELIVERY_COLUMNS, ['id', 'attemptCount']));

const delivery = qualified('d', WEBHOOK_DELIVERY_COLUMNS);
const endpoint = qualified('e', WEBHOOK_ENDPOINT_COLUMNS);
const TARGET_COLUMNS = selectList({
  deliveryId: delivery.id,
  ...pickColumns(delivery, ['orgId', 'status', 'attemptCount', 'eventId']),
  rawBody: `${qualified('o', OUTBOX_MESSAGE_COLUMNS).body}::text`,
  auditSeq: `${qualified('o', OUTBOX_MESSAGE_COLUMNS).auditSeq}::text`,
  endpointId: endpoint.id,
  ...pickColumns(endpoint, ['url', 'enabled', 'failingSince', 'secret']),
  previousSecret: `CASE WHEN ${endpoint.previousSecretExpiresAt} > clock_timestamp() THEN ${endpoint.previousSecret} END`,
} satisfies ColumnMap<TargetRow>);

function toTarget(row: TargetRow): AttemptTarget {
  return {
    deliveryId: row.deliveryId,
    orgId: row.orgId,
    status: row.status,
    attemptCount: row.attemptCount,
    eventId: row.eventId,
    rawBody: row.rawBody,
    auditSeq: row.auditSeq === null ? null : Number(row.auditSeq),
    endpoint: {
      id: row.endpointId,
      url: row.url,
      enabled: row.enabled,
      failingSince: row.failingSince,
      storedSecrets: row.previousSecret ? [row.secret, row.previousSecret] : [row.secret],
    },
  };
}

/** Webhook deliveries and their attempt log: the retry state lives here, not only in Redis. */
export class DeliveryStore {
  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
  ) {}

  /**
   * See DeliveryService.fanOut. The deliveries an earlier relay made are read by their events alone
   * (a materialized CTE, so the planner cannot fold the status test in): given `status = 'pending'`,
   * it would also scan the partial index of pending deliveries, which holds an entry for every
   * delivery finished since the last vacuum, and each fan-out would cost more as they pile up.
   */
  fanOut(eventIds: readonly string[]): Promise<PendingDelivery[]> {
    return this.sql.query<PendingDelivery>(
      'delivery-fan-out',
      `WITH created AS (
         INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, next_attempt_at)
         SELECT gen_random_uuid(), o.org_id, e.id, o.event_id, o.event_type, clock_timestamp()
         FROM outbox_messages o
         JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.enabled AND o.event_type = ANY (e.events)
         WHERE o.event_id = ANY ($1::uuid[])
         ON CONFLICT (event_id, endpoint_id) DO NOTHING
         RETURNING id, endpoint_id, attempt_count),
       earlier AS MATERIALIZED (
         SELECT id, endpoint_id, attempt_count, status FROM webhook_deliveries WHERE event_id = ANY ($1::uuid[])),
       pending AS (
         SELECT id, endpoint_id, attempt_count FROM created
         UNION ALL
         SELECT id, endpoint_id, attempt_count FROM earlier WHERE status = 'pending' AND attempt_count = 0)
       SELECT ${PENDING_COLUMNS} FROM pending
       ORDER BY row_number() OVER (PARTITION BY endpoint_id), endpoint_id`,
      [eventIds],
    );
  }

  /** What the attempts of these deliveries need, in one statement; null for a delivery that no longer exists. */
  async loadTargets(deliveryIds: readonly string[]): Promise<(AttemptTarget | null)[]> {
    const rows = await this.sql.query<TargetRow>(
      'delivery-targets',
      `SELECT ${TARGET_COLUMNS}
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN outbox_messages o ON o.event_id = d.event_id
       WHERE d.id = ANY ($1::uuid[])`,
      [deliveryIds],
    );
    const byId = new Map(rows.map((row) => [row.deliveryId, toTarget(row)]));
    return deliveryIds.map((id) => byId.get(id) ?? null);
  }

  /**
   * The reads of attempts made one job each (retries), gathered into one statement by a group
   * commit: the delivery workers run many attempts side by side.
   */
  private readonly targets = new GroupCommit<string, AttemptTarget | null>((deliveryIds) => this.loadTargets(deliveryIds), {
    maxBatch: 100,
    maxInFlight: 4,
  });

  /** The delivery, its event's body and its endpoint, read fresh for every attempt (jobs carry ids only). */
  loadTarget(deliveryId: string): Promise<AttemptTarget | null> {
    return this.targets.submit(deliveryId);
  }

  /** Attempts of many workers' jobs recorded in one statement and one commit (see ag_record_delivery_attempts). */
  private readonly records = new GroupCommit<AttemptRow, boolean>(
    async (attempts) => {
      const [row] = await this.sql.query<{ recorded: boolean[] }>(
        'record-delivery-attempts',
        'SELECT ag_record_delivery_attempts($1::jsonb) AS recorded',
        [JSON.stringify(attempts)],
      );
      return row!.recorded;
    },
    { maxBatch: 100, maxInFlight: 4 },
  );

  /**
   * Records an attempt and its consequences (see ag_record_delivery_attempts). Returns false,
   * recording nothing, when another worker already recorded this attempt (a job run twice after
   * its lock lapsed), so the attempt log and the counters never double-count.
   */
  recordAttempt(target: AttemptTarget, record: AttemptRecord, resolution: AttemptResolution, actor: Actor): Promise<boolean> {
    const disableReason = resolution.kind === 'endpoint-disabled' ? resolution.reason : null;
    const events = disableReason
      ? [
          {
            type: 'webhook.updated' as const,
            actor,
            createdAt: record.attemptedAt,
            data: { endpointId: target.endpoint.id, url: target.endpoint.url, enabled: false, reason: disableReason },
          },
        ]
      : [];
    return this.records.submit({
      deliveryId: target.deliveryId,
      ...record,
      resolution: resolution.kind,
      nextAttemptAt: resolution.kind === 'retry' ? resolution.nextAttemptAt : null,
      disableReason,
      auditEvents: events.map(serializeAuditEvent),
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
