/**
 * Errors the domain raises on purpose. Each carries the HTTP status and the stable `code` of
 * contract C1; the HTTP layer turns them into RFC 9457 problem details and nothing else.
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
