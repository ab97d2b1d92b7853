/**
 * Errors the domain raises on purpose. Each carries the HTTP status and the stable `code` of
 * contract C1; the HTTP layer turns them into RFC 9457 problem details and nothing else.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payment_required'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'request_timeout'
  | 'bad_request'
  | 'rate_limited'
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
  constructor(detail = 'A valid API key is required in the authorization header (Bearer).') {
    super(401, 'unauthorized', 'Unauthorized', detail);
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string) {
    super(403, 'forbidden', 'Forbidden', detail);
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

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, 'conflict', 'Conflict', detail);
  }
}
