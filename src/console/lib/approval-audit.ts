import type { ApprovalView, AuditEventView } from '../../client/api-types';
import { api } from '../api';

const PAGE_SIZE = 1000;
const MAX_PAGES = 5;

/**
 * The audit events of one approval. The chain is filtered by the approval's action (and agent)
 * from its creation on, the narrowest selection GET /v1/audit offers, and the approval's own
 * events are picked by `data.approvalId`. `complete` is false when more of the chain was left
 * unread than MAX_PAGES pages.
 */
export async function auditEventsOf(approval: ApprovalView): Promise<{ events: AuditEventView[]; complete: boolean }> {
  const events: AuditEventView[] = [];
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { events: batch } = await api.audit.page({
      action: approval.action,
      ...(approval.agent ? { agent: approval.agent } : {}),
      from: approval.createdAt,
      limit: String(PAGE_SIZE),
      ...(after ? { after } : {}),
    });
    events.push(...batch.filter((event) => event.data.approvalId === approval.id));
    const last = batch[batch.length - 1];
    if (batch.length < PAGE_SIZE || !last) return { events, complete: true };
    after = String(last.seq);
  }
  return { events, complete: false };
}

/** How the policy answered when the request arrived, as recorded in its approval.created event. */
export interface PolicyVerdict {
  /** `allow` or `review`; null for an orphan (no policy had the key). */
  outcome: string | null;
  /** Index of the rule that matched or failed to evaluate; null when the default outcome applied. */
  matchedRule: number | null;
  evaluationError: string | null;
}

export function policyVerdictOf(events: AuditEventView[]): PolicyVerdict | null {
  const created = events.find((event) => event.type === 'approval.created');
  if (!created) return null;
  const { outcome, matchedRule, evaluationError } = created.data as Partial<Record<keyof PolicyVerdict, unknown>>;
  return {
    outcome: typeof outcome === 'string' ? outcome : null,
    matchedRule: typeof matchedRule === 'number' ? matchedRule : null,
    evaluationError: typeof evaluationError === 'string' ? evaluationError : null,
  };
}

/**
 * The payload of each revision of an approval, as its audit events keep it: revision 1's in
 * approval.created, every later one's in its approval.revised (the view keeps only their hashes).
 */
export function revisionPayloadsOf(events: AuditEventView[]): Map<number, unknown> {
  const payloads = new Map<number, unknown>();
  for (const event of events) {
    if (event.type === 'approval.created') payloads.set(1, event.data.payload);
    if (event.type === 'approval.revised' && typeof event.data.revision === 'number') payloads.set(event.data.revision, event.data.payload);
  }
  return payloads;
}
