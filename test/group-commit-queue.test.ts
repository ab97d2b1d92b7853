import { setImmediate as endOfTurn, setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../src/lib/errors.js';
import { GroupCommit, type BatchRun } from '../src/lib/group-commit.js';

/** A batch runner the test releases by hand, as a database that stopped answering would be. */
function heldRunner() {
  const releases: (() => void)[] = [];
  const batches: number[][] = [];
  const run = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => releases.push(resolve));
    return items.map((item) => item * 10);
  };
  return { run, batches, releaseAll: () => releases.splice(0).forEach((release) => release()) };
}

describe('group commit batches', () => {
  it('starts a batch at the end of the turn with every call made in it, and queues later calls for the next', async () => {
    const runner = heldRunner();
    const writes = new GroupCommit(runner.run, { maxBatch: 2, maxInFlight: 1 });
    const calls = [writes.submit(1), writes.submit(2), writes.submit(3)];
    expect(runner.batches).toEqual([]);
    await endOfTurn();
    // Three calls of one turn, at most two a batch: the third waits for the slot.
    expect(runner.batches).toEqual([[1, 2]]);
    calls.push(writes.submit(4));
    await endOfTurn();
    expect(runner.batches).toEqual([[1, 2]]);
    runner.releaseAll();
    await sleep(10);
    expect(runner.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    runner.releaseAll();
    expect(await Promise.all(calls)).toEqual([10, 20, 30, 40]);
  });

  it("sends the calls queued meanwhile before the answered batch's callers go on", async () => {
    const runner = heldRunner();
    const writes = new GroupCommit(runner.run, { maxBatch: 10, maxInFlight: 1 });
    const first = writes.submit(1);
    await endOfTurn();
    const queued = writes.submit(2);
    runner.releaseAll();
    // The first moment the first caller can act: the queued call's batch is on its way already.
    expect(await first.then(() => structuredClone(runner.batches))).toEqual([[1], [2]]);
    runner.releaseAll();
    expect(await queued).toBe(20);
  });
});

describe('group commit batches as told', () => {
  it('tells of each batch once it is answered or has failed, with its size and how long it ran', async () => {
    const runner = heldRunner();
    const told: BatchRun[] = [];
    const writes = new GroupCommit(runner.run, { maxBatch: 10, maxInFlight: 1, onBatch: (batch) => told.push(batch) });
    const answered = [writes.submit(1), writes.submit(2)];
    await endOfTurn();
    await sleep(50);
    expect(told).toEqual([]);
    runner.releaseAll();
    expect(await Promise.all(answered)).toEqual([10, 20]);
    expect(told).toEqual([{ size: 2, seconds: expect.any(Number) }]);
    expect(told[0]!.seconds).toBeGreaterThanOrEqual(0.045);

    const failing = new GroupCommit<number, number>(
      async () => {
        throw new Error('the database went away');
      },
      { maxBatch: 10, maxInFlight: 1, onBatch: (batch) => told.push(batch) },
    );
    await expect(failing.submit(3)).rejects.toThrow('the database went away');
    expect(told.at(-1)).toEqual({ size: 1, seconds: expect.any(Number) });
  });
});

describe('group commit queue deadline', () => {
  it('refuses calls that waited past the deadline for a write slot with the deadline error, and runs the others', async () => {
    const runner = heldRunner();
    const writes = new GroupCommit(runner.run, {
      maxBatch: 64,
      maxInFlight: 1,
      queueDeadline: { ms: 100, error: () => new UnavailableError() },
    });
    const first = writes.submit(1);
    await endOfTurn();
    const overdue = [writes.submit(2), writes.submit(3)].map((call) => call.catch((error: unknown) => error));
    await sleep(150);
    const inTime = writes.submit(4);
    runner.releaseAll();

    expect(await first).toBe(10);
    for (const refused of await Promise.all(overdue)) expect(refused).toMatchObject({ status: 503, code: 'unavailable' });
    await sleep(10);
    runner.releaseAll();
    expect(await inTime).toBe(40);
    // The overdue calls never reached the database.
    expect(runner.batches).toEqual([[1], [4]]);
  });

  it('keeps every queued call without a deadline', async () => {
    const runner = heldRunner();
    const writes = new GroupCommit(runner.run, { maxBatch: 64, maxInFlight: 1 });
    const calls = [writes.submit(1)];
    await endOfTurn();
    calls.push(writes.submit(2), writes.submit(3));
    await sleep(50);
    runner.releaseAll();
    await sleep(10);
    runner.releaseAll();
    expect(await Promise.all(calls)).toEqual([10, 20, 30]);
    expect(runner.batches).toEqual([[1], [2, 3]]);
  });
});
