import type { Sql } from '../src/data/database.js';
import { approvalReminderJob } from '../src/jobs/approval-reminder.js';
import { ENQUEUE_BATCH_TIMEOUT_MS, type JobQueues } from '../src/jobs/job-queues.js';
import type { Logger } from '../src/lib/logger.js';
import { withTimeout } from '../src/lib/time.js';
import { ReminderStore } from '../src/modules/notifications/reminder-store.js';
import { watchUntilStopped } from './watch-loop.js';

/** Due reminder points one look hands to the queue. */
const PAGE_SIZE = 500;

/**
 * Hands each reminder point to the reminder queue once it has fallen due by the database's clock
 * (docs/members-and-channels.md#reminders). Every worker with the approval-reminders role runs one:
 * the job id (`remind-<id>-<revision>-<point>`) makes several watchers' handovers of one point a
 * single job, and a point stays due until its job has sent it, so a job Redis lost is handed over
 * again at a later look.
 */
export class ReminderWatcher {
  private readonly reminders: ReminderStore;

  constructor(
    sql: Sql,
    private readonly jobs: JobQueues,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {
    this.reminders = new ReminderStore(sql);
  }

  /** Hands over the due points; returns how long to wait before the next look. */
  async handOverDue(): Promise<number> {
    const due = await this.reminders.due(PAGE_SIZE);
    await withTimeout(
      Promise.all(due.map((point) => this.jobs.add(approvalReminderJob, point))),
      ENQUEUE_BATCH_TIMEOUT_MS,
      'handing due reminders to their queue',
    );
    // Points handed over stay due until sent: looking again at once would hand the same ones over.
    return this.intervalMs;
  }

  run(stop: AbortSignal): Promise<void> {
    return watchUntilStopped(stop, this.logger, 'reminder watcher', this.intervalMs, () => this.handOverDue());
  }
}
