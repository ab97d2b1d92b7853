import { pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import type { ApprovalReminder } from '../../generated/prisma/client.js';

// Columns of the table read with raw SQL; see ColumnMap for why a new one cannot be left out.
export const APPROVAL_REMINDER_COLUMNS = {
  approvalId: 'approval_id',
  orgId: 'org_id',
  revision: 'revision',
  point: 'point',
  dueAt: 'due_at',
  everySeconds: 'every_seconds',
} as const satisfies ColumnMap<ApprovalReminder>;

const DUE_REMINDER_COLUMNS = selectList(pickColumns(APPROVAL_REMINDER_COLUMNS, ['orgId', 'approvalId', 'revision', 'point']));

/** A reminder point that has fallen due: the `point`th reminder of the approval's `revision`. */
export interface DueReminder {
  orgId: string;
  approvalId: string;
  revision: number;
  point: number;
}

/** Whether a reminder point is to be sent now, and why not otherwise. */
export type ReminderState = 'due' | 'not_due' | 'gone';

/**
 * approval_reminders: the next reminder of each pending revision whose policy reminds (see
 * docs/members-and-channels.md#reminders). A row is scheduled from the policy version the revision
 * was evaluated under, so a later edit of the policy does not move it, as the deadline does not move.
 */
export class ReminderStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Schedules the first reminder of each approval's current revision, when it is pending and its
   * policy version reminds. Idempotent: an approval scheduled already at that revision keeps its
   * place; a new revision starts again from its first point. The approvals are read by id alone (a
   * materialized CTE): with the join and the status test to weigh, and statistics taken before a
   * burst of creations, the planner walked every approval of the policy instead.
   */
  async schedule(approvalIds: readonly string[]): Promise<void> {
    if (approvalIds.length === 0) return;
    await this.sql.query(
      'reminder-schedule',
      `WITH given AS MATERIALIZED (
         SELECT id, org_id, revision, revisions, created_at, policy_key, policy_version, status FROM approvals WHERE id = ANY($1::uuid[]))
       INSERT INTO approval_reminders AS r (approval_id, org_id, revision, point, due_at, every_seconds)
       SELECT a.id, a.org_id, a.revision, 1,
              coalesce((a.revisions->-1->>'at')::timestamptz, a.created_at) + make_interval(secs => (v.document->>'remindAfterSeconds')::integer),
              (v.document->>'remindEverySeconds')::integer
       FROM given a
       JOIN policy_versions v ON v.org_id = a.org_id AND v.key = a.policy_key AND v.version = a.policy_version
       WHERE a.status = 'pending' AND jsonb_typeof(v.document->'remindAfterSeconds') = 'number'
       ON CONFLICT (approval_id) DO UPDATE SET revision = EXCLUDED.revision, point = 1, due_at = EXCLUDED.due_at,
         every_seconds = EXCLUDED.every_seconds
         WHERE r.revision < EXCLUDED.revision`,
      [approvalIds],
    );
  }

  /** Reminder points due by the database's clock, the longest due first. */
  due(limit: number): Promise<DueReminder[]> {
    return this.sql.query<DueReminder>(
      'reminders-due',
      `SELECT ${DUE_REMINDER_COLUMNS} FROM approval_reminders
       WHERE due_at <= clock_timestamp() ORDER BY due_at LIMIT $1`,
      [limit],
    );
  }

  /**
   * Whether the point is to be sent: `due` while it is the approval's next point and has fallen
   * due; `gone` once it was sent (the row moved on) or the approval was settled (the row is
   * removed here then, so that nobody is reminded of it again).
   */
  async state({ approvalId, revision, point }: DueReminder): Promise<ReminderState> {
    const [row] = await this.sql.query<{ state: ReminderState }>(
      'reminder-state',
      `WITH settled AS (
         DELETE FROM approval_reminders r USING approvals a
         WHERE r.approval_id = $1 AND a.id = r.approval_id
           AND (a.status <> 'pending' OR a.revision <> r.revision OR a.expires_at <= clock_timestamp())
         RETURNING 1
       )
       SELECT CASE WHEN EXISTS (SELECT 1 FROM settled) THEN 'gone'
                   WHEN r.due_at > clock_timestamp() THEN 'not_due' ELSE 'due' END AS state
       FROM approval_reminders r WHERE r.approval_id = $1 AND r.revision = $2 AND r.point = $3`,
      [approvalId, revision, point],
    );
    return row?.state ?? 'gone';
  }

  /**
   * Moves the approval on from the point just sent: to the next, one interval from now (so that
   * reminders are never closer than the interval, however late one was sent), or away when there is
   * no repeat or the next would come after the deadline. Only the first of several workers that
   * sent the same point moves it.
   */
  async advance({ approvalId, revision, point }: DueReminder): Promise<void> {
    await this.sql.query(
      'reminder-advance',
      `WITH sent AS (
         SELECT r.approval_id, r.every_seconds, a.expires_at FROM approval_reminders r JOIN approvals a ON a.id = r.approval_id
         WHERE r.approval_id = $1 AND r.revision = $2 AND r.point = $3
         FOR UPDATE OF r
       ), repeated AS (
         UPDATE approval_reminders r SET point = r.point + 1, due_at = clock_timestamp() + make_interval(secs => s.every_seconds)
         FROM sent s
         WHERE r.approval_id = s.approval_id AND s.every_seconds IS NOT NULL
           AND clock_timestamp() + make_interval(secs => s.every_seconds) < s.expires_at
         RETURNING r.approval_id
       )
       DELETE FROM approval_reminders r USING sent s
       WHERE r.approval_id = s.approval_id AND NOT EXISTS (SELECT 1 FROM repeated)`,
      [approvalId, revision, point],
    );
  }
}
