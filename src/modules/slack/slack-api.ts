import { LogLevel, WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, WebAPIRequestError, WebClient } from '@slack/web-api';
import { RetryLater } from '../../lib/job-retries.js';

/**
 * A Web API client that reports every failure at once instead of retrying inside the call: jobs
 * own the retries (a 429 reschedules the job after Retry-After, a 5xx backs off), and a request
 * Slack is waiting on (its 3 s) cannot wait at all.
 */
export function slackClient(token: string, apiUrl: string, timeoutMs: number): WebClient {
  return new WebClient(token, {
    slackApiUrl: apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: timeoutMs,
    logLevel: LogLevel.ERROR,
  });
}

const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a failed call proves Slack did not act on it, so that making it again cannot post twice:
 * Slack answered (429, another HTTP error status, or `ok: false`), the call was never sent (our own
 * rate limit), or no connection was made. A timeout or a connection lost mid-call proves nothing.
 */
export function slackCallNotApplied(error: unknown): boolean {
  if (error instanceof RetryLater || error instanceof WebAPIRateLimitedError || error instanceof WebAPIHTTPError) return true;
  if (error instanceof WebAPIPlatformError) return true;
  if (error instanceof WebAPIRequestError) {
    const cause = (error.original as { cause?: { code?: string } }).cause;
    return NEVER_CONNECTED.has(cause?.code ?? '');
  }
  return false;
}

/** Slack refused the call for a reason that asking again will not change (a deleted message, a removed channel). */
export function isSlackRefusal(error: unknown): error is WebAPIPlatformError {
  return error instanceof WebAPIPlatformError;
}

export { WebAPIRateLimitedError };
