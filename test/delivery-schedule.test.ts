import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, nextAttemptDelay } from '../src/modules/webhooks/delivery-schedule.js';
import { EndpointSlots } from '../src/modules/webhooks/endpoint-slots.js';
import { parseWorkerRoles, WORKER_ROLES } from '../workers/worker-runtime.js';

const SCHEDULE_S = [10, 60, 300, 1_800, 7_200, 21_600, 43_200, 86_400, 86_400];

describe('webhook retry schedule (contract C5)', () => {
  it('makes 10 attempts in all, waiting at most the contract schedule after each', () => {
    expect(MAX_ATTEMPTS).toBe(10);
    SCHEDULE_S.forEach((seconds, index) => {
      expect(nextAttemptDelay(index + 1, 1, null, () => 1)).toBe(seconds * 1000);
      expect(nextAttemptDelay(index + 1, 1, null, () => 0)).toBe(0);
    });
    expect(nextAttemptDelay(10, 1, null)).toBeNull();
  });

  it('draws each wait with full jitter and scales it', () => {
    expect(nextAttemptDelay(2, 1, null, () => 0.5)).toBe(30_000);
    expect(nextAttemptDelay(2, 0.001, null, () => 1)).toBe(60);
    for (let i = 0; i < 100; i++) {
      const delay = nextAttemptDelay(3, 1, null)!;
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(300_000);
    }
  });

  it('waits at least a Retry-After, unscaled and capped at 24 h', () => {
    expect(nextAttemptDelay(1, 0.001, 7_000, () => 1)).toBe(7_000);
    expect(nextAttemptDelay(1, 1, 3 * 24 * 3600 * 1000, () => 0)).toBe(24 * 3600 * 1000);
    expect(nextAttemptDelay(10, 1, 7_000)).toBeNull();
  });
});

describe('endpoint slots', () => {
  const redis = new Redis('redis://127.0.0.1:6379');
  const prefix = `agtest:slots:${randomBytes(4).toString('hex')}`;
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('holds at most the limit per endpoint, across holders, and frees a slot on release', async () => {
    const slots = new EndpointSlots(redis, prefix, 2, 30_000);
    expect(await slots.acquire('endpoint-a', 'job-1')).toBe(true);
    expect(await slots.acquire('endpoint-a', 'job-2')).toBe(true);
    expect(await slots.acquire('endpoint-a', 'job-3')).toBe(false);
    expect(await slots.acquire('endpoint-b', 'job-4')).toBe(true);
    await slots.release('endpoint-a', 'job-1');
    expect(await slots.acquire('endpoint-a', 'job-3')).toBe(true);
  });

  it('frees the slot of a holder that never released it once its hold lapses', async () => {
    const slots = new EndpointSlots(redis, prefix, 1, 100);
    expect(await slots.acquire('endpoint-c', 'killed-worker')).toBe(true);
    expect(await slots.acquire('endpoint-c', 'next')).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await slots.acquire('endpoint-c', 'next')).toBe(true);
  });

  it('hands a slot this process frees to the attempt waiting for it, and gives up after the wait', async () => {
    const slots = new EndpointSlots(redis, prefix, 1, 30_000);
    expect(await slots.acquire('endpoint-d', 'first')).toBe(true);
    const waiting = slots.acquireWithin('endpoint-d', 'second', 5_000);
    setTimeout(() => void slots.release('endpoint-d', 'first'), 50);
    expect(await waiting).toBe(true);
    expect(await slots.acquireWithin('endpoint-d', 'third', 100)).toBe(false);
  });

  it('keeps attempts waiting for as long as this process keeps freeing the endpoint’s slots', async () => {
    const holders = ['first', 'second', 'third', 'fourth'];
    const slots = new EndpointSlots(redis, prefix, holders.length, 30_000);
    const stallMs = 1_000;
    const spacingMs = 400;
    for (const holder of holders) expect(await slots.acquire('endpoint-e', holder)).toBe(true);
    const startedAt = Date.now();
    const waiting = ['fifth', 'sixth', 'seventh', 'eighth'].map((holder) => slots.acquireWithin('endpoint-e', holder, stallMs));
    // One slot freed every 400 ms: the last waiter waits 1.6 s, longer than the stall, never 1 s without one freed.
    for (const holder of holders) {
      await new Promise((resolve) => setTimeout(resolve, spacingMs));
      await slots.release('endpoint-e', holder);
    }
    expect(await Promise.all(waiting)).toEqual([true, true, true, true]);
    expect(Date.now() - startedAt).toBeGreaterThan(stallMs);
  });

  it('lets only as many attempts of this process as the endpoint’s limit wait on while its slots are freed', async () => {
    const slots = new EndpointSlots(redis, prefix, 1, 30_000);
    const stallMs = 600;
    expect(await slots.acquire('endpoint-f', 'held')).toBe(true);
    const startedAt = Date.now();
    const timed = (holder: string) =>
      slots.acquireWithin('endpoint-f', holder, stallMs).then((acquired) => ({ acquired, afterMs: Date.now() - startedAt }));
    const [waitingOn, beyondTheLimit] = [timed('second'), timed('third')];
    // A release in this process 400 ms in (of a hold that had lapsed: nothing for the waiters to take).
    await new Promise((resolve) => setTimeout(resolve, 400));
    await slots.release('endpoint-f', 'lapsed');
    const [on, beyond] = await Promise.all([waitingOn, beyondTheLimit]);
    expect(beyond.acquired).toBe(false);
    expect(beyond.afterMs).toBeLessThan(400 + stallMs);
    expect(on.acquired).toBe(false);
    expect(on.afterMs).toBeGreaterThanOrEqual(400 + stallMs - 5);
  });
});

describe('WORKER_QUEUES', () => {
  it('runs every role when unset, and the named ones otherwise', () => {
    expect(parseWorkerRoles(undefined)).toEqual([...WORKER_ROLES]);
    expect(parseWorkerRoles(' webhook-delivery, outbox-relay ')).toEqual(['webhook-delivery', 'outbox-relay']);
  });

  it('names the roles it does not know', () => {
    expect(() => parseWorkerRoles('webhook-delivery,mailer')).toThrow(/unknown roles: mailer/);
  });
});
