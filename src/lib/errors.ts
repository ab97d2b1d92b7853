/**
 * Errors the domain raises on purpose. Each carries the HTTP status and the stable `code` of
 * docs/api.md; the HTTP layer turns them into RFC 9457 problem details and nothing else.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payment_required'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'request_timeout'
  | 'bad_request'
  | 'rate_limited'
  | 'gone'
  | 'csrf_failed'
  | 'not_a_reviewer'
  | 'self_approval'
  | 'channel_not_allowed'
  | 'key_unattributed'
  | 'requester_unattributed'
  | 'unavailable'
  | 'internal';

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly title: string,
    detail: string,
    /** Response headers the problem comes with, such as `retry-after`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export class ValidationError extends AppError {
  constructor(
    readonly errors: FieldError[],
    detail = 'The request failed validation; see `errors` for each field.',
  ) {
    super(422, 'validation_failed', 'Validation failed', detail);
  }
}

export class UnauthorizedError extends AppError {
  constructor(detail = 'A valid API key (authorization: Bearer) or a console session is required.') {
    super(401, 'unauthorized', 'Unauthorized', detail);
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string) {
    super(403, 'forbidden', 'Forbidden', detail);
  }
}

/** A cookie-authenticated write without the session's CSRF token, or a cookie-setting request from another origin. */
export class CsrfError extends AppError {
  constructor(detail = 'A write with a session cookie must carry the x-csrf-token header of the session.') {
    super(403, 'csrf_failed', 'Cross-site request refused', detail);
  }
}

/** Who may decide refused this voter (see docs/policies.md); each reason has its own code. */
export class DecisionRefusedError extends AppError {
  constructor(
    code: 'not_a_reviewer' | 'self_approval' | 'channel_not_allowed' | 'key_unattributed' | 'requester_unattributed',
    detail: string,
  ) {
    super(403, code, 'Not allowed to decide this request', detail);
  }
}

/**
 * A key whose owner is unknown (made before owners existed, see
 * docs/members-and-channels.md#keys-made-before-owners) asked for what only a known principal may do.
 */
export class KeyUnattributedError extends AppError {
  constructor(detail: string) {
    super(403, 'key_unattributed', 'Key owner unknown', detail);
  }
}

/** The database is away: nothing was done, and the same request can be sent again shortly. */
export class UnavailableError extends AppError {
  constructor(retryAfterSeconds = 5) {
    super(503, 'unavailable', 'Service unavailable', 'The database cannot be reached right now; nothing was changed. Retry shortly.', {
      'retry-after': String(retryAfterSeconds),
    });
  }
}

/** Too much of one kind of work is waiting already: refused at once instead of queued, retry after a moment. */
export class BusyError extends AppError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(503, 'unavailable', 'Service unavailable', detail, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(detail: string) {
    super(415, 'unsupported_media_type', 'Unsupported media type', detail);
  }
}

export class GoneError extends AppError {
  constructor(detail: string) {
    super(410, 'gone', 'Gone', detail);
  }
}

export class RateLimitedError extends AppError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, 'rate_limited', 'Too many requests', detail, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class PaymentRequiredError extends AppError {
  constructor(detail: string) {
    super(402, 'payment_required', 'Payment required', detail);
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super(404, 'not_found', 'Not found', detail);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(
    /** The methods the path does answer, for the `allow` header. */
    readonly allow: readonly string[],
    detail: string,
  ) {
    super(405, 'method_not_allowed', 'Method not allowed', detail);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, 'conflict', 'Conflict', detail);
  }
}

/** Something else the request needs is not there now: a key not configured, a third party unreachable. */
export class DependencyUnavailableError extends AppError {
  constructor(detail: string) {
    super(503, 'unavailable', 'Service unavailable', detail);
  }
}
