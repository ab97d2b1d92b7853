import type { DecisionChannel, PolicyDocumentInput, PolicyRule, PolicyView } from '../../client/api-types';
import { DECISION_CHANNELS } from './vocabulary';

export type Outcome = PolicyRule['outcome'];

/** A policy document as the editor's inputs hold it. */
export interface PolicyDraft {
  rules: PolicyRule[];
  defaultOutcome: Outcome;
  timeoutSeconds: string;
  onTimeout: PolicyView['onTimeout'];
  escalateTo: string;
  reviewerRoles: PolicyView['reviewers']['roles'];
  /** Emails, one per line. */
  reviewerMembers: string;
  quorum: string;
  allowSelfApproval: boolean;
  channels: DecisionChannel[];
  /** Seconds, or empty for none (docs/members-and-channels.md#reminders). */
  remindAfterSeconds: string;
  remindEverySeconds: string;
  /** The longest standing approval, in seconds, or empty for none (docs/policies.md#standing-approvals). */
  standingMaxSeconds: string;
}

/** A new policy starts from the API's defaults. */
export const NEW_POLICY: PolicyDraft = {
  rules: [],
  defaultOutcome: 'review',
  timeoutSeconds: '3600',
  onTimeout: 'expire',
  escalateTo: '',
  reviewerRoles: ['reviewer', 'admin'],
  reviewerMembers: '',
  quorum: '1',
  allowSelfApproval: false,
  channels: DECISION_CHANNELS,
  remindAfterSeconds: '',
  remindEverySeconds: '',
  standingMaxSeconds: '',
};

export function draftOf(policy: PolicyView): PolicyDraft {
  return {
    rules: policy.rules.map((rule) => ({ ...rule })),
    defaultOutcome: policy.defaultOutcome,
    timeoutSeconds: String(policy.timeoutSeconds),
    onTimeout: policy.onTimeout,
    escalateTo: policy.escalateTo ?? '',
    reviewerRoles: [...policy.reviewers.roles],
    reviewerMembers: policy.reviewers.members.join('\n'),
    quorum: String(policy.quorum),
    allowSelfApproval: policy.allowSelfApproval,
    channels: [...policy.channels],
    remindAfterSeconds: policy.remindAfterSeconds === null ? '' : String(policy.remindAfterSeconds),
    remindEverySeconds: policy.remindEverySeconds === null ? '' : String(policy.remindEverySeconds),
    standingMaxSeconds: policy.standingApproval ? String(policy.standingApproval.maxSeconds) : '',
  };
}

/** A number typed into a field; what is not a number is sent as such, for the API to name the field. */
function numberOf(text: string): number | undefined {
  return text.trim() === '' ? undefined : Number(text);
}

/** The document the API validates; the server, not the editor, decides what is valid. */
export function documentOf(draft: PolicyDraft): PolicyDocumentInput {
  const timeoutSeconds = numberOf(draft.timeoutSeconds);
  const quorum = numberOf(draft.quorum);
  const standingMaxSeconds = numberOf(draft.standingMaxSeconds);
  return {
    rules: draft.rules,
    defaultOutcome: draft.defaultOutcome,
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    onTimeout: draft.onTimeout,
    escalateTo: draft.escalateTo.trim() || null,
    reviewers: {
      roles: draft.reviewerRoles,
      members: draft.reviewerMembers
        .split('\n')
        .map((email) => email.trim())
        .filter(Boolean),
    },
    ...(quorum !== undefined ? { quorum } : {}),
    allowSelfApproval: draft.allowSelfApproval,
    channels: draft.channels,
    remindAfterSeconds: numberOf(draft.remindAfterSeconds) ?? null,
    remindEverySeconds: numberOf(draft.remindEverySeconds) ?? null,
    standingApproval: standingMaxSeconds === undefined ? null : { maxSeconds: standingMaxSeconds },
  };
}
