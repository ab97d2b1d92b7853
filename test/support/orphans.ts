import { createApproval } from '../../src/modules/approvals/approval-transitions.js';
import type { Creation } from '../../src/modules/approvals/approval-types.js';

/**
 * The creation of an orphan (no policy under its key) requested by an API key, as the service
 * builds it, for tests that hand creations to ag_write_batch themselves.
 */
export function orphanCreation(requesterKeyId: string, action: string, timeoutSeconds = 60): Creation {
  const requester = { type: 'api_key' as const, id: requesterKeyId };
  return createApproval(
    { action, payload: { action }, policyKey: 'no-policy' },
    { kind: 'orphan', timeoutSeconds, policyRevision: null, policyVersion: null },
    { actor: requester, requester },
    new Date(),
  );
}
