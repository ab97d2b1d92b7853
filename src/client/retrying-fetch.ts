import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  /** How long one call keeps retrying, from its first attempt. Default 60 000 ms. */
  budgetMs?: number;
  /** The first pause; each next one doubles, up to `maxDelayMs`. Defaults 250 and 5 000 ms. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each pause: a log line for whoever wonders why a call takes long. */
  onRetry?: (retry: RetryEvent) => void;
}

export interface RetryEvent {
  /** The attempt that failed, from 1. */
  attempt: number;
  delayMs: number;
  /** `503` for an answer, or the network error's message (`fetch failed: ECONNREFUSED`). */
  reason: string;
}

/** What a restarting web process, a proxy in front of one, or a database outage answers. */
const RETRYABLE_STATUSES = new Set([502, 503, 504]);
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * A `fetch` that tries again, with exponential backoff and jitter, when the connection fails or
 * drops (also while the answer's body is read) and on 502, 503 and 504, honouring `retry-after`.
 * Only for requests that may be sent twice: reads, and creations that carry an idempotency key.
 * Past the budget it gives up: the last answer is returned, or the last network error thrown.
 * An abort through the request's own signal is never retried.
 */
export function retryingFetch(
  fetchImpl: typeof fetch,
  { budgetMs = 60_000, initialDelayMs = 250, maxDelayMs = 5_000, onRetry }: RetryOptions = {},
): typeof fetch {
  return async (input, init) => {
    const startedAt = Date.now();
    for (let attempt = 1; ; attempt++) {
      let failed: { response: Response } | { error: unknown };
      try {
        const response = await fetchImpl(input, init);
        if (!RETRYABLE_STATUSES.has(response.status)) return await buffered(response);
        failed = { response };
      } catch (error) {
        if (init?.signal?.aborted) throw error;
        failed = { error };
      }
      const backoff = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      const retryAfterMs = 'response' in failed ? retryAfterSeconds(failed.response) * 1000 : 0;
      const delayMs = Math.round(Math.max(backoff, retryAfterMs));
      if (Date.now() + delayMs - startedAt > budgetMs) {
        if ('response' in failed) return failed.response;
        throw failed.error;
      }
      if ('response' in failed) await failed.response.body?.cancel();
      onRetry?.({ attempt, delayMs, reason: 'response' in failed ? String(failed.response.status) : describeNetworkError(failed.error) });
      await sleep(delayMs, undefined, { signal: init?.signal ?? undefined });
    }
  };
}

/** The whole answer read now, so that a connection lost in the middle of the body is retried too. */
async function buffered(response: Response): Promise<Response> {
  const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

function retryAfterSeconds(response: Response): number {
  const seconds = Number(response.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return cause ? `${error.message}: ${cause.code ?? cause.message}` : error.message;
}
