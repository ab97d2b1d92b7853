import { expect, it } from 'vitest';
import { BackgroundWork } from '../src/lib/background-work.js';
import { createLogger } from '../src/lib/logger.js';
import { recordLogLines } from './support/log-lines.js';

function recordingLogger() {
  const { lines, sink } = recordLogLines();
  return { lines, logger: createLogger({ LOG_LEVEL: 'info', NODE_ENV: 'test' }, 'background-work-test', sink) };
}

it('lets a shutdown wait for the work running, gives up on work that hangs past its timeout, and logs what failed', async () => {
  const { lines, logger } = recordingLogger();
  const background = new BackgroundWork(logger, 200);
  let slowWorkDone = false;
  background.start('slow work', new Promise<void>((resolve) => setTimeout(() => resolve(void (slowWorkDone = true)), 50)));
  background.start('hung work', new Promise(() => {}), { approvalId: 'a1' });
  background.start('failing work', Promise.reject(new Error('redis said no')));

  await background.finish();
  expect(slowWorkDone).toBe(true);
  expect(lines).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ level: 40, msg: 'failing work failed', err: expect.objectContaining({ message: 'redis said no' }) }),
      expect.objectContaining({
        level: 40,
        msg: 'hung work failed',
        approvalId: 'a1',
        err: expect.objectContaining({ message: 'hung work took longer than 200 ms' }),
      }),
    ]),
  );
  expect(lines).toHaveLength(2);
  // Nothing is left running: a second shutdown does not wait.
  await background.finish();
});

it('sends the calls of one turn together at its end, and lets a shutdown wait for them', async () => {
  const { logger } = recordingLogger();
  const background = new BackgroundWork(logger, 200);
  let sent: string[] = [];
  const hint = background.eachTurn(
    'a batched hint',
    (items: string[]) => new Promise<void>((resolve) => setTimeout(() => resolve(void (sent = items)), 20)),
  );
  hint('first');
  hint('second');

  await background.finish();
  expect(sent).toEqual(['first', 'second']);
});
