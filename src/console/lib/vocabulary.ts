import type { ApprovalStatus, AuditEventType, DecisionChannel, PolicyView, WebhookEventType } from '../../client/api-types';

/**
 * Every member of a string union, for the UI to list (filters, checkboxes). The record must name
 * each member exactly once, so the compiler flags a list when the API's schema gains or loses one;
 * the schemas themselves stay out of the bundle.
 */
function everyValue<T extends string>(members: Record<T, true>): T[] {
  return Object.keys(members) as T[];
}

export const APPROVAL_STATUSES = everyValue<ApprovalStatus>({
  pending: true,
  approved: true,
  rejected: true,
  expired: true,
  escalated: true,
  changes_requested: true,
});

/** How a status reads on a badge: the API's word, with spaces. */
export const STATUS_LABELS: Record<ApprovalStatus, string> = {
  pending: 'pending',
  approved: 'approved',
  rejected: 'rejected',
  expired: 'expired',
  escalated: 'escalated',
  changes_requested: 'changes requested',
};

export const WEBHOOK_EVENT_TYPES = everyValue<WebhookEventType>({
  'approval.approved': true,
  'approval.rejected': true,
  'approval.expired': true,
  'approval.escalated': true,
  'approval.orphaned': true,
  'approval.changes_requested': true,
  'approval.revised': true,
  'audit.checkpoint': true,
});

export const AUDIT_EVENT_TYPES = everyValue<AuditEventType>({
  'approval.created': true,
  'approval.approved': true,
  'approval.rejected': true,
  'approval.expired': true,
  'approval.escalated': true,
  'approval.orphaned': true,
  'approval.vote_recorded': true,
  'approval.stage_completed': true,
  'policy.updated': true,
  'policy.deleted': true,
  'webhook.created': true,
  'webhook.updated': true,
  'webhook.deleted': true,
  'webhook.secret_rotated': true,
  'member.created': true,
  'member.updated': true,
  'member.removed': true,
  'key.created': true,
  'key.revoked': true,
  'key.attributed': true,
  'integration.updated': true,
  'integration.removed': true,
  'approval.changes_requested': true,
  'approval.revised': true,
  'standing_approval.revoked': true,
});

export const DECISION_CHANNELS = everyValue<DecisionChannel>({ api: true, console: true, email: true, slack: true, teams: true });

/** The roles a policy may let decide: a viewer never does. */
export const REVIEWER_ROLES = everyValue<NonNullable<PolicyView['reviewers']>['roles'][number]>({ reviewer: true, admin: true });
