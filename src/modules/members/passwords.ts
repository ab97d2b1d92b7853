import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { BusyError } from '../../lib/errors.js';

/**
 * Passwords are hashed with scrypt, memory-hard (32 MiB per hash at N=2^15, r=8), from node:crypto
 * so no native addon is needed; it runs on libuv's thread pool, off the event loop. The stored
 * form names its parameters, so they can be raised later without invalidating old hashes.
 */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;

export const MIN_PASSWORD_LENGTH = 10;

/**
 * libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise) also runs the DNS
 * lookups of webhook deliveries, other crypto and file access. Hashing takes at most half of it,
 * so that work never queues behind sign-ins.
 */
export const HASHING_THREADS = 2;
/** Sign-ins that may wait for a hashing thread; the next one is refused at once (docs/members-and-channels.md). */
export const MAX_WAITING_SIGN_INS = 32;

/**
 * Runs hashes `HASHING_THREADS` at a time. Checking a sign-in's password waits in a bounded
 * queue and is refused with 503 when it is full. Setting a password (accepting an invite) goes
 * ahead of waiting sign-ins: it needs a valid invite, so a flood cannot feed it, and a flood of
 * sign-ins cannot hold it up; it is bounded the same way.
 */
class HashingQueue {
  private running = 0;
  private readonly waiting = { ahead: [] as (() => void)[], signIns: [] as (() => void)[] };
  /** A moving average of one hash, for the `retry-after` of a refusal. */
  private averageMs = 100;

  /** Throws BusyError when a hash of `lane` would find its queue full. */
  assertRoom(lane: keyof HashingQueue['waiting']): void {
    if (this.running < HASHING_THREADS || this.waiting[lane].length < MAX_WAITING_SIGN_INS) return;
    const queued = this.waiting.ahead.length + this.waiting.signIns.length + this.running;
    throw new BusyError(
      'Too many sign-ins are being checked right now; try again in a moment.',
      (queued * this.averageMs) / HASHING_THREADS / 1000,
    );
  }

  async run<T>(lane: keyof HashingQueue['waiting'], hash: () => Promise<T>): Promise<T> {
    this.assertRoom(lane);
    if (this.running < HASHING_THREADS) this.running++;
    // The thread is handed over by the hash that frees it (see below), so `running` stays counted.
    else await new Promise<void>((resolve) => this.waiting[lane].push(resolve));
    const started = performance.now();
    try {
      return await hash();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (performance.now() - started);
      const next = this.waiting.ahead.shift() ?? this.waiting.signIns.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** One queue per process: the thread pool it protects is the process's. */
const queue = new HashingQueue();

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** The stored form of a new password (an invite accepted). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await queue.run('ahead', () => derive(password, salt, PARAMETERS));
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** A hash nobody's password matches, checked against when there is no member, so that takes as long. */
const UNMATCHABLE = `scrypt$${PARAMETERS.N}$${PARAMETERS.r}$${PARAMETERS.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_LENGTH).toString('base64')}`;

/**
 * Throws BusyError (503) when a password check would find MAX_WAITING_SIGN_INS waiting: a sign-in
 * asks first, so that one refused costs no database work.
 */
export function assertRoomToVerify(): void {
  queue.assertRoom('signIns');
}

/**
 * Whether `password` matches `stored`; with no stored hash it does the same work and answers false.
 * Throws BusyError (503) at once when MAX_WAITING_SIGN_INS checks are waiting already.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, N, r, p, salt, key] = (stored ?? UNMATCHABLE).split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const derived = await queue.run('signIns', () =>
    derive(password, Buffer.from(salt, 'base64'), { N: Number(N), r: Number(r), p: Number(p), maxmem: PARAMETERS.maxmem }),
  );
  return stored !== null && derived.length === expected.length && timingSafeEqual(derived, expected);
}
