import type { Problem } from './approval-types.js';

/** A problem+json answer (RFC 9457) of the API. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    readonly problem: Problem,
    /** Seconds from `retry-after`, on 429 and 503. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(problem.detail);
  }

  /** Stable and machine-readable (`validation_failed`, `not_found`, `unavailable`…). */
  get code(): string {
    return this.problem.code;
  }

  get detail(): string {
    return this.problem.detail;
  }

  /** Each invalid field with its message, on validation problems; empty otherwise. */
  get errors(): { path: string; message: string }[] {
    return this.problem.errors ?? [];
  }

  /** The message of the validation error naming `path` (`password`, `rules.2.when`), if there is one. */
  fieldError(path: string): string | undefined {
    return this.errors.find((error) => error.path === path)?.message;
  }
}

export async function toApiError(response: Response): Promise<ApiError> {
  const retryAfter = Number(response.headers.get('retry-after'));
  const retryAfterSeconds = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null;
  const text = await response.text();
  if ((response.headers.get('content-type') ?? '').includes('json')) {
    try {
      return new ApiError(response.status, JSON.parse(text) as Problem, retryAfterSeconds);
    } catch {
      // Not the API's problem document after all: described below from the status alone.
    }
  }
  return new ApiError(
    response.status,
    {
      type: 'about:blank',
      title: response.statusText || `HTTP ${response.status}`,
      status: response.status,
      detail: `The server answered ${response.status} ${response.statusText} without a problem document.`,
      code: 'internal',
    },
    retryAfterSeconds,
  );
}
