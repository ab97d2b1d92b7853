import type { Logger } from '../lib/logger.js';
import type { RedisClient } from '../lib/redis.js';
import type { Sql } from './database.js';

/** How often each process compares the replica's replay position with the primary's WAL. */
export const REPLICA_CHECK_INTERVAL_MS = 100;

/** Primary positions kept while the replica has not replayed them; older ones are dropped (which only makes it look staler). */
const MAX_SAMPLES = 1_000;

/** A WAL position ('16/B374D848') as a byte offset, so that two can be compared. */
function lsnBytes(lsn: string): bigint {
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * A streaming replica and how far behind the primary it is, in time. Every check reads the
 * primary's WAL insert position (noting when it asked) and the replica's replay position: once the
 * replica has replayed a position, every transaction that had committed on the primary before that
 * position was read is on the replica. So `replayedThrough` is a time on this process's clock
 * before which every commit is readable on the replica, and the replica serves reads only while it
 * is less than `maxLagMs` old. A replica that fails a check, or a statement, serves nothing until a
 * check finds it fresh again: its reads go to the primary, which answers them the same.
 */
export class ReplicaReads {
  private replayedThrough = Number.NEGATIVE_INFINITY;
  private readonly samples: { at: number; lsn: bigint }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  /** Statements on the replica while it is fresh, on the primary otherwise or when the replica fails one. */
  readonly sql: Sql;

  constructor(
    private readonly primary: Sql,
    private readonly replica: Sql,
    /** For a reader that opens a connection of its own (a bulk export's COPY). */
    readonly url: string,
    readonly maxLagMs: number,
    private readonly logger: Logger,
  ) {
    this.sql = {
      query: async (name, text, values, options) => {
        if (!this.fresh) return this.primary.query(name, text, values, options);
        try {
          return await this.replica.query(name, text, values, options);
        } catch (error) {
          this.lost(error);
          return this.primary.query(name, text, values, options);
        }
      },
    };
  }

  /** Checks now and then every REPLICA_CHECK_INTERVAL_MS; reads go to the primary until the first check has answered. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), REPLICA_CHECK_INTERVAL_MS).unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Behind the primary by less than `maxLagMs`, as of the last check. */
  get fresh(): boolean {
    return Date.now() - this.replayedThrough < this.maxLagMs;
  }

  /** How far behind the primary the replica was at the last check, in ms (Infinity when unknown). */
  get lagMs(): number {
    return Date.now() - this.replayedThrough;
  }

  private check(): Promise<void> {
    // One check at a time: a replica that hangs must not pile them up.
    this.checking ??= this.compare().finally(() => (this.checking = null));
    return this.checking;
  }

  private async compare(): Promise<void> {
    const at = Date.now();
    let primaryLsn: string;
    try {
      [{ lsn: primaryLsn }] = (await this.primary.query<{ lsn: string }>(
        'replica-check-primary',
        'SELECT pg_current_wal_insert_lsn()::text AS lsn',
        [],
      )) as [{ lsn: string }];
    } catch {
      return; // the primary away: the replica only grows staler
    }
    this.samples.push({ at, lsn: lsnBytes(primaryLsn) });
    if (this.samples.length > MAX_SAMPLES) this.samples.shift();
    let replayed: { lsn: string | null; standby: boolean };
    try {
      [replayed] = (await this.replica.query<{ lsn: string | null; standby: boolean }>(
        'replica-check-replayed',
        'SELECT pg_last_wal_replay_lsn()::text AS lsn, pg_is_in_recovery() AS standby',
        [],
      )) as [{ lsn: string | null; standby: boolean }];
    } catch (error) {
      this.lost(error);
      return;
    }
    // Not a standby (promoted, or the primary itself): it has everything.
    const position = replayed.standby && replayed.lsn !== null ? lsnBytes(replayed.lsn) : null;
    let newest = -1;
    for (let index = 0; index < this.samples.length; index++) if (position === null || this.samples[index]!.lsn <= position) newest = index;
    if (newest < 0) return;
    this.replayedThrough = Math.max(this.replayedThrough, this.samples[newest]!.at);
    this.samples.splice(0, newest);
  }

  private lost(error: unknown): void {
    if (this.replayedThrough !== Number.NEGATIVE_INFINITY)
      this.logger.warn({ err: error }, 'read replica failed; reads go to the primary until it answers again');
    this.replayedThrough = Number.NEGATIVE_INFINITY;
  }
}

/**
 * Who wrote a moment ago, in Redis so that every web process knows: a principal's reads go to the
 * primary for `windowMs` after its last write, which is at least the replica's allowed lag, so a
 * GET right after its own write never misses it. Redis being away sends reads to the primary.
 */
export class RecentWriters {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly windowMs: number,
    private readonly logger: Logger,
  ) {}

  private key(subject: string): string {
    return `${this.prefix}:wrote:${subject}`;
  }

  /** Called before the writer hears its write succeeded, so that its next request finds the mark. */
  async note(subject: string): Promise<void> {
    await this.redis.set(this.key(subject), '1', 'PX', this.windowMs).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'recent write not noted: Redis unavailable');
    });
  }

  async wroteRecently(subject: string): Promise<boolean> {
    try {
      return (await this.redis.exists(this.key(subject))) === 1;
    } catch {
      return true;
    }
  }
}

/** Reads that may be a moment behind, for the domain services that serve them. */
export interface Reads {
  /** The statements of a read by `subject` (a principal key; null for background work). */
  sqlFor(subject: string | null): Promise<Sql>;
  /** The replica's URL while it is fresh, for a reader that opens its own connection and checks it has what it needs; null otherwise. */
  replicaUrl(): string | null;
}

/**
 * Where a read that may be a moment behind goes: the replica when there is one, it is fresh, and
 * the reader has not written within the window; the primary otherwise. `subject` names the
 * reader (a principal); null for background work, which wrote nothing it must read back.
 */
export class ReadRouting implements Reads {
  constructor(
    private readonly primary: Sql,
    readonly replica: ReplicaReads | null,
    private readonly writers: RecentWriters | null,
  ) {}

  async sqlFor(subject: string | null): Promise<Sql> {
    if (!this.replica?.fresh) return this.primary;
    if (subject !== null && this.writers && (await this.writers.wroteRecently(subject))) return this.primary;
    return this.replica.sql;
  }

  replicaUrl(): string | null {
    return this.replica?.fresh ? this.replica.url : null;
  }

  /** Marks `subject` as having just written (nothing to do without a replica). */
  async noteWrite(subject: string): Promise<void> {
    if (this.replica && this.writers) await this.writers.note(subject);
  }
}
