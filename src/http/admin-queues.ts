import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Express, RequestHandler } from 'express';
import { secretsEqual } from '../lib/secret-tokens.js';

const QUEUE_DASHBOARD_PATH = '/admin/queues';

/** Bull Board, read-only (no retry, clean or pause from the browser), behind HTTP basic auth. */
export function mountQueueDashboard(
  app: Express,
  { queues, user, password }: { queues: readonly Queue[]; user: string; password: string },
): void {
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Approval Gate queues' } },
  });
  const board = serverAdapter.getRouter() as Express;
  // The board is an Express app of its own, with Express's defaults; keep the API's choice of not naming the server.
  board.disable('x-powered-by');
  app.use(QUEUE_DASHBOARD_PATH, basicAuth(user, password), board);
}

function basicAuth(user: string, password: string): RequestHandler {
  return (req, res, next) => {
    const [scheme, encoded] = (req.headers.authorization ?? '').split(' ');
    const decoded = scheme?.toLowerCase() === 'basic' && encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    // RFC 7617: the user id cannot contain a colon, the password can.
    const colon = decoded.indexOf(':');
    // Both comparisons always run, over equal-length digests, so timing reveals neither which part was wrong nor its length.
    const userOk = secretsEqual(decoded.slice(0, Math.max(colon, 0)), user);
    const passwordOk = secretsEqual(colon < 0 ? '' : decoded.slice(colon + 1), password);
    if (colon >= 0 && userOk && passwordOk) return next();
    res.status(401).set('www-authenticate', 'Basic realm="Approval Gate queues"').type('text/plain').send('Authentication required.');
  };
}
