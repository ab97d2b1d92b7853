import type { RedisClient } from '../../lib/redis.js';
import type { BackgroundWork } from '../../lib/background-work.js';

/**
 * Wakes the outbox relay as soon as a transaction that wrote outbox rows commits, so webhooks
 * leave within milliseconds. Only a hint: the relay also polls, so a lost signal (Redis away)
 * delays a webhook by one poll interval and never loses it. Nobody waits for it: it goes out as
 * background work.
 */
export class OutboxSignal {
  private readonly channel: string;
  /** Commits of the same event-loop turn share one PUBLISH. */
  readonly notify: () => void;

  constructor(publisher: RedisClient, prefix: string, background: BackgroundWork) {
    this.channel = `${prefix}:outbox:committed`;
    this.notify = background.eachTurn<void>('waking the outbox relay (it will poll)', () => publisher.publish(this.channel, '1'));
  }

  async listen(subscriber: RedisClient, onSignal: () => void): Promise<void> {
    subscriber.on('message', (channel: string) => {
      if (channel === this.channel) onSignal();
    });
    await subscriber.subscribe(this.channel);
  }
}
