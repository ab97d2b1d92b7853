import type { Services } from '../services.js';
import { SCOPES, type Tenant } from '../modules/orgs/tenant.js';
import { policyDocumentSchema } from '../modules/policies/policy-schemas.js';

const DEMO_ORG = 'Demo organization';

/**
 * Makes the data a newcomer needs to try the API: an organization on the Pro plan, a policy that
 * approves small refunds and sends the rest to review, and a fresh key with every scope.
 */
export async function seedDemo(services: Services) {
  const { orgId } = await services.orgs.createOrganization({ name: DEMO_ORG, plan: 'pro', adminEmails: ['admin@example.com'] });
  const { id: keyId, key } = await services.orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'demo' });
  const tenant: Tenant = {
    orgId,
    plan: 'pro',
    scopes: new Set(SCOPES),
    actor: { type: 'system', id: 'demo-seed' },
    principal: { type: 'api_key', keyId },
  };
  const policy = await services.policies.put(
    tenant,
    'refunds',
    policyDocumentSchema.parse({
      rules: [{ when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' }],
      timeoutSeconds: 3600,
    }),
  );
  return { orgId, apiKey: { id: keyId, key }, policy };
}
