import type { AuditEventType } from '../modules/audit/audit-events.js';

/**
 * The events after which a message posted for an approval (a Slack message, a Teams card) is
 * rewritten: a vote under quorum, a stage reaching its quorum, every settlement wherever it happened, and a request for changes.
 * One list, so that every channel that posts follows the same ones.
 */
export const POSTED_CARD_EVENTS = [
  'approval.vote_recorded',
  'approval.stage_completed',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.changes_requested',
] as const satisfies readonly AuditEventType[];
