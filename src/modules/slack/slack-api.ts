import type { ErrorCode, WebAPIPlatformError, WebAPIRateLimitedError, WebAPIRequestError, WebClient } from '@slack/web-api';
import { neverConnected } from '../../lib/never-connected.js';

/**
 * A Web API client that reports every failure at once instead of retrying inside the call: jobs
 * own the retries (a 429 reschedules the job after Retry-After, a 5xx backs off), and a request
 * Slack is waiting on (its 3 s) cannot wait at all. The Slack SDK is loaded with the first client:
 * a deployment whose organizations do not use Slack should not carry it in every process.
 */
export async function slackClient(token: string, apiUrl: string, timeoutMs: number): Promise<WebClient> {
  const { LogLevel, WebClient } = await import('@slack/web-api');
  return new WebClient(token, {
    slackApiUrl: apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: timeoutMs,
    logLevel: LogLevel.ERROR,
  });
}

/**
 * The SDK's errors told apart by their `code`, one of its ErrorCode values, so that telling them
 * apart does not load the SDK; the template types hold each string to the SDK's own enum.
 */
const PLATFORM_ERROR: `${ErrorCode.PlatformError}` = 'slack_webapi_platform_error';
const RATE_LIMITED_ERROR: `${ErrorCode.RateLimitedError}` = 'slack_webapi_rate_limited_error';
const HTTP_ERROR: `${ErrorCode.HTTPError}` = 'slack_webapi_http_error';
const REQUEST_ERROR: `${ErrorCode.RequestError}` = 'slack_webapi_request_error';

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;

/** Slack answered 429 (the client rejects rate-limited calls instead of waiting). */
export function isSlackRateLimited(error: unknown): error is WebAPIRateLimitedError {
  return codeOf(error) === RATE_LIMITED_ERROR;
}

/**
 * Whether a failed call proves Slack did not act on it, so that making it again cannot post twice:
 * Slack answered (429, another HTTP error status, or `ok: false`), or no connection was made. A
 * timeout or a connection lost mid-call proves nothing. (Our own rate limit, RetryLater, is
 * NotificationStore.sendOnce's to tell.)
 */
export function slackCallNotApplied(error: unknown): boolean {
  const code = codeOf(error);
  if (code === RATE_LIMITED_ERROR || code === HTTP_ERROR || code === PLATFORM_ERROR) return true;
  if (code === REQUEST_ERROR) return neverConnected(((error as WebAPIRequestError).original as { cause?: { code?: string } }).cause?.code);
  return false;
}

/** Slack refused the call for a reason that asking again will not change (a deleted message, a removed channel). */
export function isSlackRefusal(error: unknown): error is WebAPIPlatformError {
  return codeOf(error) === PLATFORM_ERROR;
}
