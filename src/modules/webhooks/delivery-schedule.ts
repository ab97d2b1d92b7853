/**
 * The retry schedule of docs/webhooks.md: the wait after attempt n (1-based) before attempt n + 1.
 * Ten attempts in all over about three days.
 */
const BACKOFF_SECONDS = [10, 60, 300, 1_800, 7_200, 21_600, 43_200, 86_400, 86_400] as const;

export const MAX_ATTEMPTS = BACKOFF_SECONDS.length + 1;
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/**
 * Milliseconds to wait before the next attempt, or null when `attempt` was the last. Full jitter
 * (uniform between zero and the scheduled wait) spreads the retries of an endpoint that failed
 * for everyone at once; `scale` shrinks the schedule for tests. A receiver's Retry-After is a
 * floor, capped at 24 h.
 */
export function nextAttemptDelay(
  attempt: number,
  scale: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const scheduled = BACKOFF_SECONDS[attempt - 1];
  if (scheduled === undefined) return null;
  const jittered = Math.round(random() * scheduled * 1000 * scale);
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** An endpoint whose every delivery has failed for this long is disabled (see docs/webhooks.md). */
export const FAILING_ENDPOINT_DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
