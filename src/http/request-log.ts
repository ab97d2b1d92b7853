import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { pinoHttp, startTime } from 'pino-http';
import type { Logger } from '../lib/logger.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Paths whose last segment is a credential: decision links, invites and Slack self-links. The
 * router matches paths without regard to case, and a request line may name the absolute URL.
 */
const TOKEN_PATH = /^((?:[a-z][a-z0-9+.-]*:\/\/[^/]*)?\/(?:d|console\/invite|console\/link-slack)\/)[^/?#]+/i;

/** The URL as logged: a token in the path replaced by `:token`, so that a log reader cannot use it. */
export function redactPathTokens(url: string): string {
  return url.replace(TOKEN_PATH, '$1:token');
}

type RoutedRequest = IncomingMessage & { originalUrl?: string };

/** What a log line says of a request: never a header (cookies, authorization) nor the body. */
function requestFields(req: RoutedRequest): { id: unknown; method: string | undefined; url: string } {
  return { id: req.id, method: req.method, url: redactPathTokens(req.originalUrl ?? req.url ?? '') };
}

function completionLine(req: RoutedRequest, res: ServerResponse): string {
  return `${req.method} ${requestFields(req).url} ${res.statusCode} ${Math.round(elapsedMs(res))} ms`;
}

/**
 * The caller's `x-request-id` when it is a sane one, otherwise a new UUID; echoed in the response.
 * randomUUID builds its string by concatenation, a tree of small pieces that a long-poll would
 * hold for as long as it waits; the lowercase copy (a no-op on its characters) is one flat string.
 */
function requestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID().toLowerCase();
  res.setHeader('x-request-id', id);
  return id;
}

/**
 * pino-http: one line per request when its response is done (or the client went away), with the
 * method, the url with path tokens redacted, the status, the duration and the request id. The
 * serializers copy those fields only (`wrapSerializers: false` keeps pino-http from building its
 * full request object with headers first). `req.log` carries the same request fields for a
 * handler's own lines; the response's logger is the shared one (`quietResLogger`), so a held
 * long-poll keeps one child logger, `req.log` (pino-http makes it for every request).
 */
export function logRequests(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: requestId,
    quietResLogger: true,
    wrapSerializers: false,
    serializers: {
      req: requestFields,
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessObject: (req, _res, line: object) => ({ req, ...line }),
    customSuccessMessage: completionLine,
    // The cause was logged where it happened (the error handler); the request's line says only that it failed.
    customErrorObject: (req, res, _error, line: { responseTime: number }) => ({ req, res, responseTime: line.responseTime }),
    customErrorMessage: completionLine,
  });
}

/** Milliseconds since the request log saw the request: the one start time the log and the metrics share. */
export function elapsedMs(res: ServerResponse): number {
  return Date.now() - res[startTime];
}
