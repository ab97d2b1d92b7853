import { randomBytes } from 'node:crypto';
import type { SealedColumns } from '../../data/sealed-columns.js';
import { SecretBox } from '../../lib/secret-box.js';
import { WEBHOOK_ENDPOINT_COLUMNS } from './webhook-columns.js';

/**
 * A new endpoint secret (see docs/webhooks.md): `whsec_` + 32 random bytes in standard base64, with padding.
 * The spec's `v1=<hex>` signature is keyed by the UTF-8 bytes of the whole string, as Stripe does;
 * the Standard Webhooks `webhook-signature` by the base64-decoded part after `whsec_`.
 */
export function generateWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/**
 * One context for both columns of an endpoint: a rotation moves the sealed `secret` into
 * `previous_secret` as it is, and it must still open there.
 */
const sealContext = ({ orgId, endpointId }: { orgId: string; endpointId: string }) => `webhook:${orgId}:${endpointId}`;

/** The endpoint secrets' columns, for `secrets:reseal`. */
export const webhookSecretColumns: SealedColumns = {
  table: 'webhook_endpoints',
  key: WEBHOOK_ENDPOINT_COLUMNS.id,
  columns: [WEBHOOK_ENDPOINT_COLUMNS.secret, WEBHOOK_ENDPOINT_COLUMNS.previousSecret].map((name) => ({
    name,
    context: (row: { key: string; orgId: string }) => sealContext({ orgId: row.orgId, endpointId: row.key }),
  })),
};

/**
 * Endpoint secrets as stored (see docs/webhooks.md): sealed with SECRETS_ENCRYPTION_KEY when it is
 * set, as Slack's are; without it, as they are. A value stored before the key was set opens as it
 * is until `secrets:reseal` seals it.
 */
export class WebhookSecrets {
  constructor(private readonly box: SecretBox | null) {}

  toStored(endpoint: { orgId: string; endpointId: string }, secret: string): string {
    return this.box ? this.box.seal(secret, sealContext(endpoint)) : secret;
  }

  fromStored(endpoint: { orgId: string; endpointId: string }, stored: string): string {
    if (!SecretBox.isSealed(stored)) return stored;
    if (!this.box) throw new Error(`webhook endpoint ${endpoint.endpointId}: its secret is sealed, and SECRETS_ENCRYPTION_KEY is not set`);
    try {
      return this.box.open(stored, sealContext(endpoint));
    } catch (error) {
      throw new Error(`webhook endpoint ${endpoint.endpointId}: ${(error as Error).message}`);
    }
  }
}
