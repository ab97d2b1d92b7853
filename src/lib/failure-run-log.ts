import type { Logger } from './logger.js';

/**
 * The log of a loop that tries again on its own schedule (the outbox relay, the deadline
 * watchers): the first failure of a run of them is an error, the rest are debug lines, and the
 * first success after them is an info line, so that an outage of Redis or the database writes two
 * lines rather than one per attempt.
 */
export class FailureRunLog {
  private failing = false;

  /**
   * @param subject what fails, as the lines name it ('outbox relay')
   * @param retry what happens after the first failure ('retrying at the next poll')
   */
  constructor(
    private readonly logger: Logger,
    private readonly subject: string,
    private readonly retry: string,
  ) {}

  failed(error: unknown): void {
    if (this.failing) this.logger.debug({ err: error }, `${this.subject} still failing`);
    else this.logger.error({ err: error }, `${this.subject} failed; ${this.retry}`);
    this.failing = true;
  }

  succeeded(): void {
    if (this.failing) this.logger.info(`${this.subject} recovered`);
    this.failing = false;
  }
}
