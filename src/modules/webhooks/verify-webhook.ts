/**
 * The helper receivers use to check an Approval Gate delivery (see docs/webhooks.md, "Verifying a delivery").
 * Published as `@approval-gate/client/verify-webhook`: it imports only node:crypto (and types), so keep it so.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookEventBody } from '../audit/audit-events.js';

export type { WebhookEventBody };

export type WebhookVerificationFailure =
  'missing_header' | 'invalid_timestamp' | 'timestamp_outside_tolerance' | 'no_matching_signature' | 'invalid_body';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    /** Stable machine-readable reason; `message` says it for humans. */
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

/** Node's `IncomingHttpHeaders` (any key case), a plain record, or a fetch `Headers`. */
export type WebhookHeadersLike = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyWebhookInput {
  /** The exact request bytes, before any JSON parsing (e.g. `express.raw({ type: 'application/json' })`). */
  rawBody: string | Buffer;
  headers: WebhookHeadersLike;
  /** The endpoint's `whsec_…` secret; several are tried in turn (e.g. while you switch secrets). */
  secret: string | readonly string[];
  /** Largest accepted distance between the signed timestamp and now, either way. Default 300. */
  toleranceSeconds?: number;
  /** Current time in milliseconds. Default `Date.now()`. */
  now?: number;
}

const SIGNATURE_HEADER = 'x-service-signature';
const TIMESTAMP_HEADER = 'x-service-timestamp';

/**
 * Verifies a delivery and returns its event. Throws `WebhookVerificationError` when a header is
 * missing, the timestamp is not an integer or is more than `toleranceSeconds` from now, or no
 * `v1=` signature of the header (several during a secret rotation) matches. Comparison is in
 * constant time, over the raw bytes; the body is parsed only once it is authentic.
 */
export function verifyWebhook({
  rawBody,
  headers,
  secret,
  toleranceSeconds = 300,
  now = Date.now(),
}: VerifyWebhookInput): WebhookEventBody {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.some((entry) => typeof entry !== 'string' || entry.length === 0)) {
    throw new TypeError('verifyWebhook needs the endpoint secret');
  }
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) throw new TypeError('toleranceSeconds must be a non-negative number');

  const signatureHeader = readHeader(headers, SIGNATURE_HEADER, ' ');
  const timestampHeader = readHeader(headers, TIMESTAMP_HEADER, null);

  if (!/^\d{1,15}$/.test(timestampHeader)) {
    throw new WebhookVerificationError('invalid_timestamp', `${TIMESTAMP_HEADER} is not an integer number of seconds`);
  }
  const timestamp = Number(timestampHeader);
  const skew = Math.floor(now / 1000) - timestamp;
  if (Math.abs(skew) > toleranceSeconds) {
    const direction = skew > 0 ? `${skew} s old` : `${-skew} s in the future`;
    throw new WebhookVerificationError(
      'timestamp_outside_tolerance',
      `timestamp is ${direction}, outside the tolerance of ${toleranceSeconds} s`,
    );
  }

  const candidates = signatureHeader
    .split(/[\s,]+/)
    .filter((part) => part.startsWith('v1='))
    .map((part) => part.slice(3));
  if (candidates.length === 0) throw new WebhookVerificationError('no_matching_signature', `${SIGNATURE_HEADER} carries no v1= signature`);

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const expected = secrets.map((key) => createHmac('sha256', Buffer.from(key, 'utf8')).update(`${timestampHeader}.`).update(body).digest());
  let matched = false;
  for (const candidate of candidates) {
    if (!/^[0-9a-f]{64}$/i.test(candidate)) continue;
    const given = Buffer.from(candidate, 'hex');
    for (const digest of expected) {
      // Both are 32 bytes here; timingSafeEqual throws on a length mismatch, hence the check.
      if (given.length === digest.length && timingSafeEqual(given, digest)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'no signature matches the body and timestamp for this secret');

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not valid JSON');
  }
  if (typeof event !== 'object' || event === null || typeof (event as { id?: unknown }).id !== 'string') {
    throw new WebhookVerificationError('invalid_body', 'the body is not a webhook event');
  }
  return event as WebhookEventBody;
}

/** Case-insensitive lookup; repeated values are joined with `joinWith`, or refused when it is null. */
function readHeader(headers: WebhookHeadersLike, name: string, joinWith: string | null): string {
  let value: string | string[] | null | undefined;
  if (typeof headers.get === 'function') {
    value = (headers as { get(name: string): string | null }).get(name);
  } else {
    const record = headers as Record<string, string | string[] | undefined>;
    value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  }
  if (Array.isArray(value)) {
    if (value.length > 1 && joinWith === null) throw new WebhookVerificationError('invalid_timestamp', `${name} appears more than once`);
    value = value.join(joinWith ?? '');
  }
  if (value === undefined || value === null || value.trim() === '') {
    throw new WebhookVerificationError('missing_header', `missing ${name} header`);
  }
  return value.trim();
}
