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
  /**
   * Deadlines this close are handed over ahead, as jobs delayed until the deadline. At least
   * `maxWaitMs`, so that one look reaches the next; with `maxWaitMs`, below the shortest timeout,
   * so that the watcher's place never passes a deadline committed after its look.
   */
  aheadMs: number;
  /**
   * How long before its deadline a handed-over job falls due: the job reads the approval then and
   * waits out the rest itself (see ApprovalService.timeOut), so that the queue's lateness and the
   * read happen before the deadline instead of after it. Below `aheadMs`.
   */
  leadMs: number;
  /** Due approvals handed over per look; a full page is followed by the next at once. */
  pageSize: number;
}

/**
 * Hands each pending approval to the expiry queue for its deadline by the database's clock,
 * instead of a delayed job per approval enqueued at its creation, which was a large share of a
 * pending creation's work (see docs/operations.md, "Asynchronous work"). A deadline less than
 * `aheadMs` away is handed over ahead, as a job delayed until `leadMs` before it falls due: a job
 * handed over only once its deadline had passed was late by the watcher's round (its wait, its
 * look, the handover), and one starting at the deadline by the queue's own lateness and its read.
 * It sleeps until the next deadline comes that close, or at most `maxWaitMs`.
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
    const { aheadMs, leadMs } = this.options;
    const { due, nextInMs } = await ApprovalStore.dueDeadlines(this.sql, this.after, this.options.pageSize, aheadMs);
    // Timed from the answer, not from the statement's start: a job may then start a moment late, never earlier than its lead.
    const answeredAt = performance.now();
    const sinceAnswer = () => performance.now() - answeredAt;
    const handovers = due.map(({ orgId, id, inMs }) =>
      this.jobs.add(approvalExpiryJob, { orgId, approvalId: id }, Math.max(0, Math.ceil(inMs - leadMs - sinceAnswer()))),
    );
    await withTimeout(Promise.all(handovers), ENQUEUE_BATCH_TIMEOUT_MS, 'handing due approvals to the expiry queue');
    // Moved on only once Redis holds the jobs: a failed handover is read again at the next look.
    const last = due.at(-1);
    if (last) this.after = { expiresAt: last.expiresAt, id: last.id };
    if (due.length === this.options.pageSize) return 0;
    const untilNextIsClose = (nextInMs ?? Infinity) - aheadMs - sinceAnswer();
    return Math.min(this.options.maxWaitMs, Math.max(0, untilNextIsClose));
  }

  /** Watches until `stop` aborts; a failed look is tried again after `maxWaitMs`. */
  run(stop: AbortSignal): Promise<void> {
    return watchUntilStopped(stop, this.logger, 'deadline watcher', this.options.maxWaitMs, () => this.handOverDue());
  }
}
