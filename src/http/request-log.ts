import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { Logger } from '../lib/logger.js';

declare module 'http' {
  interface IncomingMessage {
    /** The request id: the caller's `x-request-id` when it is a sane one, otherwise a new UUID. */
    id: string;
    /** A logger whose lines carry the request (id, method, url); made when first used. */
    readonly log: Logger;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const startedAt = Symbol('request started at');

type RoutedRequest = IncomingMessage & { originalUrl?: string };
type TimedResponse = ServerResponse<RoutedRequest> & { [startedAt]: number };

/**
 * One line per request, when its response closes: method, url, status, duration and request id,
 * never a header of the request or the response (cookies, authorization). The request id is
 * echoed in `x-request-id`. Per request it keeps only the id and the start time: the completion
 * listener is one function for all requests, and `req.log` (for a handler's own lines) is a
 * child logger made only when a request asks for it, so 10,000 held long-polls cost no logger.
 */
export function logRequests(app: Express, logger: Logger): RequestHandler {
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: IncomingMessage) {
      return logger.child({ req: requestFields(this) });
    },
  });

  function logCompletion(this: TimedResponse): void {
    const req = this.req;
    const responseTime = Math.round(elapsedMs(this));
    const line = { req: requestFields(req), res: { statusCode: this.statusCode }, responseTime };
    const url = req.originalUrl ?? req.url;
    logger[this.statusCode >= 500 ? 'error' : 'info'](line, `${req.method} ${url} ${this.statusCode} ${responseTime} ms`);
  }

  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', req.id);
    (res as unknown as TimedResponse)[startedAt] = performance.now();
    res.on('close', logCompletion);
    next();
  };
}

/** Milliseconds since logRequests saw the request: the one start time the log and the metrics share. */
export function elapsedMs(res: ServerResponse): number {
  return performance.now() - (res as TimedResponse)[startedAt];
}

function requestFields(req: RoutedRequest): { id: string; method: string | undefined; url: string | undefined } {
  return { id: req.id, method: req.method, url: req.originalUrl ?? req.url };
}
