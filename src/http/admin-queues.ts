import type { Queue } from 'bullmq';
import type { Express, RequestHandler, Response } from 'express';
import type { AttemptLimiter } from '../lib/attempt-limiter.js';
import { onFirstUse } from '../lib/first-use.js';
import { RateLimitedError } from '../lib/errors.js';
import { secretsEqual } from '../lib/secret-tokens.js';
import { clientAddress } from './client-address.js';

const QUEUE_DASHBOARD_PATH = '/admin/queues';

/** Wrong basic-auth credentials one client address may present per minute, across every web process. */
export const DASHBOARD_FAILURES = { limit: 10, windowMs: 60_000 };

/**
 * Bull Board, read-only (no retry, clean or pause from the browser), behind HTTP basic auth whose
 * failures are limited per client address (`failures`, at DASHBOARD_FAILURES). The board is built
 * on the first request that gets through: its packages are a share of the web process's memory
 * that only an operator looking at the queues should cost.
 */
export function mountQueueDashboard(
  app: Express,
  { queues, user, password, failures }: { queues: readonly Queue[]; user: string; password: string; failures: AttemptLimiter },
): void {
  const board = onFirstUse(() => buildBoard(queues));
  const dashboard: RequestHandler = async (req, res, next) => {
    (await board())(req, res, next);
  };
  app.use(QUEUE_DASHBOARD_PATH, basicAuth(user, password, failures), dashboard);
}

async function buildBoard(queues: readonly Queue[]): Promise<Express> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/express'),
  ]);
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Approval Gate queues' } },
  });
  const board = serverAdapter.getRouter() as Express;
  // The board is an Express app of its own, with Express's defaults; keep the API's choice of not naming the server.
  board.disable('x-powered-by');
  return board;
}

function challenge(res: Response): void {
  res.status(401).set('www-authenticate', 'Basic realm="Approval Gate queues"').type('text/plain').send('Authentication required.');
}

/**
 * A request without credentials is only asked for them. Credentials are compared first (that costs
 * nothing), then a failure is counted for the client address; once the address has used up its
 * failures, every answer is 429, the right credentials' too, so that further guesses learn
 * nothing until the minute is over. Right credentials count nothing: the board's page loads many
 * files and polls its API at once.
 */
function basicAuth(user: string, password: string, failures: AttemptLimiter): RequestHandler {
  return async (req, res, next) => {
    if (req.headers.authorization === undefined) return challenge(res);
    const [scheme, encoded] = req.headers.authorization.split(' ');
    const decoded = scheme?.toLowerCase() === 'basic' && encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    // RFC 7617: the user id cannot contain a colon, the password can.
    const colon = decoded.indexOf(':');
    // Both comparisons always run, over equal-length digests, so timing reveals neither which part was wrong nor its length.
    const userOk = secretsEqual(decoded.slice(0, Math.max(colon, 0)), user);
    const passwordOk = secretsEqual(colon < 0 ? '' : decoded.slice(colon + 1), password);
    const right = colon >= 0 && userOk && passwordOk;
    const address = clientAddress(req);
    const waitSeconds = right ? await failures.exhausted(address) : await failures.take(address);
    if (waitSeconds !== null) {
      throw new RateLimitedError('Too many failed sign-ins to the queue dashboard from this address; try again later.', waitSeconds);
    }
    if (right) return next();
    challenge(res);
  };
}
