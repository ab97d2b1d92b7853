import { DelayedError, type Job } from 'bullmq';

/** True when this run of the job is its last: a failure now is final. */
export function isLastAttempt(job: Pick<Job, 'attemptsMade' | 'opts'>): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

/**
 * Thrown by a handler that must wait before it can go on (a third party's rate limit): the job runs
 * again after `delayMs`, and the wait is not counted as a failed attempt.
 */
export class RetryLater extends Error {
  override name = 'RetryLater';

  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(`${reason}; again in ${delayMs} ms`);
  }
}

/** Moves the job to the delayed set for a RetryLater; rethrows anything else. */
export async function deferOrRethrow(error: unknown, job: Job, token: string | undefined): Promise<never> {
  if (!(error instanceof RetryLater)) throw error;
  await job.moveToDelayed(Date.now() + error.delayMs, token);
  throw new DelayedError();
}
