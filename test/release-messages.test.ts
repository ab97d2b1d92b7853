import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv } from './support/test-env.js';
import { eventually } from './support/eventually.js';

let env: TestEnv;

useTestEnv((created) => ({ env } = created));

const present = { gone: false, onGone: () => {} };

/** A subscriber as the previous releases had: SUBSCRIBE on the legacy channel. */
async function legacyReader() {
  const reader = new Redis(env.config.REDIS_URL.url);
  const messages: string[] = [];
  reader.on('message', (_channel: string, message: string) => messages.push(message));
  await reader.subscribe(`${env.config.REDIS_PREFIX}:approvals:settled`);
  return { messages, stop: () => reader.quit() };
}

/** Publishes the settlements given in one event-loop turn and waits until each one's waiter here is woken. */
async function settleInOneTurn(ids: string[]): Promise<void> {
  const watches = ids.map((id) => env.services.settlements.watch(id));
  const woken = watches.map((watch) => watch.wait(10_000, present));
  for (const id of ids) env.services.settlements.publish(id);
  await Promise.all(woken);
  watches.forEach((watch) => watch.release());
}

describe('settlement messages across releases', () => {
  it('reach a process of the previous release one id a message while it listens, and stop once it is gone', async () => {
    // Every message on the legacy channel, seen by a pattern subscription (which the publisher does not count).
    const observer = new Redis(env.config.REDIS_URL.url);
    const legacyMessages: string[] = [];
    observer.on('pmessage', (_pattern: string, _channel: string, message: string) => legacyMessages.push(message));
    await observer.psubscribe(`${env.config.REDIS_PREFIX}:approvals:settled`);
    try {
      await settleInOneTurn(['alone-1', 'alone-2']);
      await sleep(200);
      expect(legacyMessages).toEqual([]);

      const old = await legacyReader();
      // The publisher looks for readers of the previous release every two seconds.
      await eventually(async () => {
        await settleInOneTurn(['b1', 'b2', 'b3']);
        return old.messages.length > 0;
      }, 10_000);
      expect(old.messages.slice(-3)).toEqual(['b1', 'b2', 'b3']);
      await old.stop();

      await sleep(2_100);
      await settleInOneTurn(['after-1']);
      const seen = legacyMessages.length;
      await settleInOneTurn(['after-2', 'after-3']);
      await sleep(200);
      expect(legacyMessages.length).toBe(seen);
    } finally {
      await observer.quit();
    }
  });

  it('wake this release’s long-polls when the previous release decides (one id, or several comma-separated)', async () => {
    const publisher = new Redis(env.config.REDIS_URL.url);
    try {
      const ids = ['old-1', 'old-2', 'old-3'];
      const watches = ids.map((id) => env.services.settlements.watch(id));
      const woken = watches.map((watch) => watch.wait(10_000, present));
      await publisher.publish(`${env.config.REDIS_PREFIX}:approvals:settled`, 'old-1');
      await publisher.publish(`${env.config.REDIS_PREFIX}:approvals:settled`, 'old-2,old-3');
      await Promise.all(woken);
      watches.forEach((watch) => watch.release());
      // A malformed v2 message wakes nobody and breaks nothing.
      await publisher.publish(`${env.config.REDIS_PREFIX}:approvals:settled:v2`, 'not json');
      await settleInOneTurn(['still-works']);
    } finally {
      await publisher.quit();
    }
  });
});
