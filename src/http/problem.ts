import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { isDatabaseUnavailable } from '../data/database-errors.js';
import {
  AppError,
  LimitReachedError,
  MethodNotAllowedError,
  NotFoundError,
  UnavailableError,
  ValidationError,
  type ErrorCode,
  type FieldError,
} from '../lib/errors.js';

export function problemType(code: ErrorCode): string {
  return `urn:approval-gate:problem:${code}`;
}

/** `extensions`: the members a problem of this code adds (`errors` of validation, `limit` of limit_reached). */
function sendProblem(
  res: Response,
  status: number,
  code: ErrorCode,
  title: string,
  detail: string,
  extensions: { errors?: FieldError[]; limit?: LimitReachedError['limit'] } = {},
): void {
  if (status === 401) res.setHeader('www-authenticate', 'Bearer');
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ type: problemType(code), title, status, detail, code, ...extensions }));
}

export const notFoundHandler: RequestHandler = (req) => {
  throw new NotFoundError(`No route for ${req.method} ${req.path}.`);
};

/** The one place errors become responses; anything unexpected is logged and answered without internals. */
export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  if (res.headersSent) {
    // Too late for a problem document: the client sees the response cut short.
    req.log.error({ err: error }, 'unhandled error');
    return res.destroy();
  }
  if (error instanceof ValidationError) {
    return sendProblem(res, error.status, error.code, error.title, error.message, { errors: error.errors });
  }
  if (error instanceof LimitReachedError) {
    return sendProblem(res, error.status, error.code, error.title, error.message, { limit: error.limit });
  }
  if (error instanceof MethodNotAllowedError) res.setHeader('allow', error.allow.join(', '));
  if (!(error instanceof AppError) && isDatabaseUnavailable(error)) {
    req.log.warn({ err: error }, 'database unavailable');
    return errorHandler(new UnavailableError(), req, res, _next);
  }
  if (error instanceof AppError) {
    res.set(error.headers);
    return sendProblem(res, error.status, error.code, error.title, error.message);
  }
  const bodyError = error as { type?: string; status?: number };
  if (bodyError.type === 'entity.too.large') {
    return sendProblem(res, 413, 'payload_too_large', 'Payload too large', 'The request body exceeds 1 MB.');
  }
  if (typeof bodyError.status === 'number' && bodyError.status >= 400 && bodyError.status < 500) {
    return sendProblem(res, 422, 'validation_failed', 'Validation failed', 'The request body could not be read.', {
      errors: [{ path: 'body', message: String((error as Error).message) }],
    });
  }
  req.log.error({ err: error }, 'unhandled error');
  sendProblem(res, 500, 'internal', 'Internal server error', 'The server failed to handle the request; it has been logged.');
};
