import { createHmac } from 'node:crypto';

/** Sent on every delivery (a user-agent naming the service; see docs/webhooks.md). */
export const WEBHOOK_USER_AGENT = 'ApprovalGate-Webhooks/1.0 (+approval-gate webhook delivery)';

/** `whsec_` + standard base64 (of 32 random bytes; see docs/webhooks.md). */
const SECRET_FORMAT = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

export interface SignDeliveryInput {
  /** The endpoint's current secret, then, during a rotation's grace period, the previous one: newest first. */
  secrets: readonly string[];
  /** The event id (body `id`): the Standard Webhooks `webhook-id`, the same for every endpoint and retry. */
  eventId: string;
  /** The delivery id (one per event and endpoint, the same across retries): `x-service-webhook-id`. */
  deliveryId: string;
  /** Whole unix seconds. Every attempt is signed afresh, so this is the attempt's time; defaults to now. */
  timestamp?: number;
  /** The exact bytes that will be POSTed. */
  rawBody: string | Buffer;
}

/** The headers of one delivery attempt (a type alias, so it is assignable to `Record<string, string>`). */
export type WebhookDeliveryHeaders = {
  'content-type': 'application/json';
  'user-agent': string;
  /** `v1=<hex>`, one per secret, space-separated, newest first (see docs/webhooks.md). */
  'x-service-signature': string;
  'x-service-timestamp': string;
  'x-service-webhook-id': string;
  /** Standard Webhooks: the event id. */
  'webhook-id': string;
  'webhook-timestamp': string;
  /** Standard Webhooks: `v1,<base64>`, one per secret, space-separated, newest first. */
  'webhook-signature': string;
};

/**
 * Signs one delivery attempt for both verification schemes of docs/webhooks.md: ours (keyed by the UTF-8 bytes of the whole `whsec_…` string, byte-for-byte Stripe's scheme) and
 * Standard Webhooks (keyed by the base64-decoded part after `whsec_`). With two secrets (rotation)
 * each header carries two signatures, so a receiver holding either secret verifies.
 */
export function signDelivery({ secrets, eventId, deliveryId, timestamp, rawBody }: SignDeliveryInput): WebhookDeliveryHeaders {
  if (secrets.length === 0) throw new TypeError('signDelivery needs at least one secret');
  const seconds = timestamp ?? Math.floor(Date.now() / 1000);
  if (!Number.isSafeInteger(seconds) || seconds < 0) throw new TypeError('timestamp must be whole unix seconds');
  for (const id of [eventId, deliveryId]) {
    // Both are header values (and `webhook-id` is signed content): printable ASCII, no spaces.
    if (!/^[\x21-\x7e]+$/.test(id)) throw new TypeError(`invalid id for a webhook header: ${JSON.stringify(id)}`);
  }
  const ts = String(seconds);
  const ours: string[] = [];
  const standard: string[] = [];
  for (const secret of new Set(secrets)) {
    const match = SECRET_FORMAT.exec(secret);
    if (!match || match[1]!.length === 0) throw new TypeError('a webhook secret must be whsec_ followed by standard base64');
    ours.push(`v1=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${ts}.`).update(rawBody).digest('hex')}`);
    standard.push(
      `v1,${createHmac('sha256', Buffer.from(match[1]!, 'base64')).update(`${eventId}.${ts}.`).update(rawBody).digest('base64')}`,
    );
  }
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'x-service-signature': ours.join(' '),
    'x-service-timestamp': ts,
    'x-service-webhook-id': deliveryId,
    'webhook-id': eventId,
    'webhook-timestamp': ts,
    'webhook-signature': standard.join(' '),
  };
}
