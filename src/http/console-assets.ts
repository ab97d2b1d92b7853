import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { NotFoundError } from '../lib/errors.js';
import { htmlContent, problemContent, type DocumentedOperation } from './openapi.js';

/** The console in the OpenAPI document: one operation for its page and files, whatever the path below /console. */
export const consoleOperation: DocumentedOperation = {
  method: 'get',
  path: '/console/{clientRoute}',
  operation: {
    summary: 'The reviewer console (a single-page app): its files, and its page for any other path',
    tags: ['console'],
    security: [],
    parameters: [
      {
        name: 'clientRoute',
        in: 'path',
        required: true,
        description: 'Any path below /console, slashes included (approvals/<id>, invite/<token>, assets/…).',
        schema: { type: 'string' },
      },
    ],
    responses: {
      200: { description: 'A console file, or the console page, which routes itself.', content: htmlContent },
      404: { description: 'No such console asset, or the console is not built (npm run build).', content: problemContent },
    },
  },
};

/**
 * Every console response: scripts, styles, images and connections from this origin only (the
 * bundle loads nothing from elsewhere), no framing, and no referrer, since invite tokens are part
 * of console URLs.
 */
const CONSOLE_HEADERS = {
  'content-security-policy': "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * Serves the reviewer console built into `directory` (`npm run build`) at /console: hashed assets
 * cached for good, and index.html for every other path, so client routes such as
 * /console/approvals/:id load the app, which then routes itself.
 */
/** A path the file server refuses (a dotfile, a malformed name) is no console file: 404, not the API's body-error handling. */
const fileErrors: ErrorRequestHandler = (error: { status?: number }, req, _res, next) => {
  if (typeof error.status === 'number' && error.status < 500) return next(new NotFoundError(`No console file at ${req.originalUrl}.`));
  next(error);
};

export function mountConsole(app: Express, directory: string): void {
  const index = path.join(directory, 'index.html');
  const router = express.Router();
  router.use((_req, res, next) => {
    res.set(CONSOLE_HEADERS);
    next();
  });
  if (!existsSync(index)) {
    router.use(() => {
      throw new NotFoundError(`The console is not built in ${path.basename(directory)}: run npm run build.`);
    });
  } else {
    const missingAsset: RequestHandler = (req) => {
      throw new NotFoundError(`No console asset at ${req.originalUrl}.`);
    };
    router.use('/assets', express.static(path.join(directory, 'assets'), { index: false, immutable: true, maxAge: '365d' }), missingAsset);
    router.use(express.static(directory, { index: false, redirect: false, maxAge: '1h' }));
    router.get('/{*clientRoute}', (_req, res, next) => {
      // Relative to `root`, so that a dot in the directory's own path (node_modules/.cache) is not refused as a dotfile.
      res.set('cache-control', 'no-cache').sendFile('index.html', { root: directory }, (error) => error && next(error));
    });
    router.use(fileErrors);
  }
  app.use('/console', router);
}
