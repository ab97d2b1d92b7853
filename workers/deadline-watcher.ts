import type { Sql } from '../src/data/database.js';
import { approvalExpiryJob } from '../src/jobs/approval-expiry.js';
import { ENQUEUE_BATCH_TIMEOUT_MS, type JobQueues } from '../src/jobs/job-queues.js';
import type { Logger } from '../src/lib/logger.js';
import { withTimeout } from '../src/lib/time.js';
import { ApprovalStore, type DeadlineCursor } from '../src/modules/approvals/approval-store.js';
import { watchUntilStopped } from './watch-loop.js';

export interface DeadlineWatcherOptions {
  /**
   * The longest it waits before looking again. Below the shortest timeout (1 s), so that a deadline
   * committed while it waits is seen before it falls due.
   */
  maxWaitMs: number;
  /** Due approvals handed over per look; a full page is followed by the next at once. */
  pageSize: number;
}

/**
 * Hands each pending approval to the expiry queue once its deadline has passed by the database's
 * clock, instead of a delayed job per approval enqueued at its creation, which was a large share
 * of a pending creation's work (see docs/operations.md, "Asynchronous work"). It sleeps until the next deadline,
 * or at most `maxWaitMs`.
 *
 * Every worker with the approval-expiry role runs one: the job id (`expire-<id>`) makes several
 * watchers' handovers of one approval a single job. Each remembers where it stopped in deadline
 * order, so an approval whose job is waiting is not read again on every look; the sweeper of the
 * maintenance queue settles what falls through (a job Redis lost, a deadline committed behind the
 * watcher's place).
 */
export class DeadlineWatcher {
  private after: DeadlineCursor | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly jobs: JobQueues,
    private readonly logger: Logger,
    private readonly options: DeadlineWatcherOptions,
  ) {}

  /** Hands over one page of due approvals; returns how long to wait before the next look. */
  async handOverDue(): Promise<number> {
    const { due, nextInMs } = await ApprovalStore.dueDeadlines(this.sql, this.after, this.options.pageSize);
    const handovers = due.map(({ orgId, id }) => this.jobs.add(approvalExpiryJob, { orgId, approvalId: id }));
    await withTimeout(Promise.all(handovers), ENQUEUE_BATCH_TIMEOUT_MS, 'handing due approvals to the expiry queue');
    // Moved on only once Redis holds the jobs: a failed handover is read again at the next look.
    const last = due.at(-1);
    if (last) this.after = { expiresAt: last.expiresAt, id: last.id };
    if (due.length === this.options.pageSize) return 0;
    return Math.min(this.options.maxWaitMs, Math.max(0, nextInMs ?? Infinity));
  }

  /** Watches until `stop` aborts; a failed look is tried again after `maxWaitMs`. */
  run(stop: AbortSignal): Promise<void> {
    return watchUntilStopped(stop, this.logger, 'deadline watcher', this.options.maxWaitMs, () => this.handOverDue());
  }
}
