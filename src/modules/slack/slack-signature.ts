import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack's requests are refused when their timestamp is further than this from now (replays). */
export const SLACK_TIMESTAMP_TOLERANCE_SECONDS = 300;

/** `v0=` + hex HMAC-SHA256(signing secret, `v0:<timestamp>:<raw body>`): Slack's request signature. */
export function slackSignature(signingSecret: string, timestamp: string, rawBody: Buffer): string {
  return 'v0=' + createHmac('sha256', signingSecret).update(`v0:${timestamp}:`).update(rawBody).digest('hex');
}

/** Whether `x-slack-request-timestamp` is unix seconds within the tolerance of now. */
export function isFreshSlackTimestamp(timestamp: string | undefined, nowMs = Date.now()): timestamp is string {
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(nowMs / 1000 - Number(timestamp)) <= SLACK_TIMESTAMP_TOLERANCE_SECONDS;
}

/** Compares a presented `x-slack-signature` with the expected one in constant time. */
export function isSlackSignature(signingSecret: string, timestamp: string, rawBody: Buffer, presented: string): boolean {
  const expected = Buffer.from(slackSignature(signingSecret, timestamp, rawBody));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
