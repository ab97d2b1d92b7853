import { pickColumns, selectList, type ColumnMap } from '../data/columns.js';
import type { Sql } from '../data/database.js';
import type { ConsumerTask } from '../generated/prisma/client.js';
import type { DomainEvent } from '../modules/outbox/domain-events.js';

/** Every column of `consumer_tasks`; see ColumnMap for why a new one cannot be left out. */
export const CONSUMER_TASK_COLUMNS = {
  eventId: 'event_id',
  consumer: 'consumer',
  orgId: 'org_id',
  status: 'status',
  attempts: 'attempts',
  lastError: 'last_error',
  createdAt: 'created_at',
  completedAt: 'completed_at',
} as const satisfies ColumnMap<ConsumerTask>;

const EVENT_ID = selectList(pickColumns(CONSUMER_TASK_COLUMNS, ['eventId']));
const STALLED_COLUMNS = selectList(pickColumns(CONSUMER_TASK_COLUMNS, ['eventId', 'consumer']));

/**
 * consumer_tasks: one row per (domain event, consumer), written by the relay before the event is
 * marked relayed. A consumer's pending work is therefore in PostgreSQL, whatever happens to its
 * job in Redis, and one sweep (see resumeStalledTasks) finds what a lost job left behind.
 */
export class ConsumerTaskStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Records a pending task per event (a task that exists already is kept as it is) and returns the
   * ids of the events whose task for this consumer is still pending: those need a job. Earlier
   * tasks are read by their key alone (a materialized CTE): left to weigh the status test, the
   * planner read every entry the status index holds under `pending`, those of the tasks finished
   * since the last vacuum included.
   */
  async create(consumer: string, events: readonly DomainEvent[]): Promise<string[]> {
    const rows = await this.sql.query<Pick<ConsumerTask, 'eventId'>>(
      'consumer-tasks-create',
      `WITH given AS (SELECT * FROM unnest($2::uuid[], $3::uuid[]) AS g(event_id, org_id)),
       created AS (
         INSERT INTO consumer_tasks (event_id, consumer, org_id)
         SELECT event_id, $1, org_id FROM given
         ON CONFLICT (event_id, consumer) DO NOTHING
         RETURNING event_id),
       earlier AS MATERIALIZED (SELECT event_id, status FROM consumer_tasks WHERE consumer = $1 AND event_id = ANY ($2::uuid[]))
       SELECT ${EVENT_ID} FROM created
       UNION
       SELECT event_id FROM earlier WHERE status = 'pending'`,
      [consumer, events.map((event) => event.id), events.map((event) => event.orgId)],
    );
    return rows.map((row) => row.eventId);
  }

  /** Counts a run of the task; false when it is no longer pending (done, or failed for good). */
  async begin(eventId: string, consumer: string): Promise<boolean> {
    const rows = await this.sql.query(
      'consumer-task-begin',
      `UPDATE consumer_tasks SET attempts = attempts + 1 WHERE event_id = $1 AND consumer = $2 AND status = 'pending' RETURNING 1`,
      [eventId, consumer],
    );
    return rows.length > 0;
  }

  async complete(eventId: string, consumer: string): Promise<void> {
    await this.sql.query(
      'consumer-task-complete',
      `UPDATE consumer_tasks SET status = 'done', completed_at = clock_timestamp(), last_error = NULL
       WHERE event_id = $1 AND consumer = $2`,
      [eventId, consumer],
    );
  }

  /** Gives up on a task after its job's last attempt; the error stays on the row for an operator. */
  async fail(eventId: string, consumer: string, error: string): Promise<void> {
    await this.sql.query(
      'consumer-task-fail',
      `UPDATE consumer_tasks SET status = 'failed', completed_at = clock_timestamp(), last_error = $3
       WHERE event_id = $1 AND consumer = $2 AND status = 'pending'`,
      [eventId, consumer, error.slice(0, 2000)],
    );
  }

  /** Tasks pending for `graceMs` or more, oldest first: their job may have been lost. */
  findStalled(graceMs: number, limit: number): Promise<Pick<ConsumerTask, 'eventId' | 'consumer'>[]> {
    return this.sql.query(
      'consumer-tasks-stalled',
      `SELECT ${STALLED_COLUMNS} FROM consumer_tasks
       WHERE status = 'pending' AND created_at <= clock_timestamp() - $1 * interval '1 millisecond'
       ORDER BY created_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  /** Forgets tasks done longer ago than `retentionMs`; returns how many. */
  async pruneDone(retentionMs: number, limit: number): Promise<number> {
    const rows = await this.sql.query(
      'consumer-tasks-prune',
      `DELETE FROM consumer_tasks WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM consumer_tasks
         WHERE status = 'done' AND completed_at < clock_timestamp() - $1 * interval '1 millisecond' LIMIT $2))
       RETURNING 1`,
      [retentionMs, limit],
    );
    return rows.length;
  }
}
