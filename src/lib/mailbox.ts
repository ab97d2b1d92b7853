import type { RedisClient } from './redis.js';
import { z } from 'zod';

/** The mailbox keeps the newest mails only: it is for trying things, not an archive. */
const MAILBOX_SIZE = 200;

const keptMailSchema = z.object({
  to: z.array(z.string()),
  subject: z.string(),
  text: z.string(),
  sentAt: z.string(),
});

/** A mail that was not sent because there is no mail server, as the mailbox keeps it. */
export type KeptMail = z.output<typeof keptMailSchema>;

/**
 * Where development keeps the mail it would have sent, for the mailbox page (see
 * docs/development.md): a capped Redis list, so that every web and worker process writes to and
 * reads the same one.
 */
export class Mailbox {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.key = `${prefix}:dev-mailbox`;
  }

  async keep(mail: Omit<KeptMail, 'sentAt'>, now = new Date()): Promise<void> {
    await this.redis
      .multi()
      .lpush(this.key, JSON.stringify({ ...mail, sentAt: now.toISOString() }))
      .ltrim(this.key, 0, MAILBOX_SIZE - 1)
      .exec();
  }

  /** Newest first. */
  async list(): Promise<KeptMail[]> {
    const entries = await this.redis.lrange(this.key, 0, MAILBOX_SIZE - 1);
    return entries.flatMap((entry) => {
      const parsed = keptMailSchema.safeParse(JSON.parse(entry));
      return parsed.success ? [parsed.data] : [];
    });
  }
}
