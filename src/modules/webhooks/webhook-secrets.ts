import { randomBytes } from 'node:crypto';

/**
 * A new endpoint secret (see docs/webhooks.md): `whsec_` + 32 random bytes in standard base64, with padding.
 * The spec's `v1=<hex>` signature is keyed by the UTF-8 bytes of the whole string, as Stripe does;
 * the Standard Webhooks `webhook-signature` by the base64-decoded part after `whsec_`.
 */
export function generateWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}
