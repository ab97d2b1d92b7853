import { ApiError } from '../../client/api-client';
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
  reviewerRoles: NonNullable<PolicyView['reviewers']>['roles'];
  /** Emails, one per line. */
  reviewerMembers: string;
  quorum: string;
  /** A policy's stages of reviewers, which the editor keeps as they are (and then sends no reviewers or quorum). */
  stages: PolicyView['stages'];
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
  stages: null,
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
    reviewerRoles: [...(policy.reviewers?.roles ?? NEW_POLICY.reviewerRoles)],
    reviewerMembers: policy.reviewers?.members.join('\n') ?? NEW_POLICY.reviewerMembers,
    quorum: String(policy.quorum ?? NEW_POLICY.quorum),
    stages: policy.stages,
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
    ...(draft.stages
      ? { stages: draft.stages }
      : {
          reviewers: {
            roles: draft.reviewerRoles,
            members: draft.reviewerMembers
              .split('\n')
              .map((email) => email.trim())
              .filter(Boolean),
          },
          ...(quorum !== undefined ? { quorum } : {}),
        }),
    allowSelfApproval: draft.allowSelfApproval,
    channels: draft.channels,
    remindAfterSeconds: numberOf(draft.remindAfterSeconds) ?? null,
    remindEverySeconds: numberOf(draft.remindEverySeconds) ?? null,
    standingApproval: standingMaxSeconds === undefined ? null : { maxSeconds: standingMaxSeconds },
  };
}

/** What the server adds to a policy's document in its views. */
const VIEW_FIELDS = new Set(['key', 'version', 'createdAt', 'updatedAt', 'changedBy']);

/**
 * A stored policy (or one of its versions) as the document a `PUT` would store again: everything
 * but what the server adds, so that what the editor does not show (the shadow) is kept.
 */
export function documentOfView(view: PolicyView): PolicyDocumentInput {
  return Object.fromEntries(Object.entries(view).filter(([field]) => !VIEW_FIELDS.has(field))) as PolicyDocumentInput;
}

/** What a policy asks of the time after creation, which a shadow, deciding nothing, has none of. */
const FOLLOW_UP_FIELDS = new Set(['remindAfterSeconds', 'remindEverySeconds', 'standingApproval']);

/** The editor's draft as a shadow: its rules and who decides, without reminders or standing approvals. */
export function shadowOf(draft: PolicyDocumentInput): NonNullable<PolicyDocumentInput['shadow']> {
  return Object.fromEntries(Object.entries(draft).filter(([field]) => !FOLLOW_UP_FIELDS.has(field))) as NonNullable<
    PolicyDocumentInput['shadow']
  >;
}

/** Where the API names the fields of a draft sent as `policy` (evaluate, replay), and of a shadow. */
export const DRAFT_PREFIX = 'policy.';
export const SHADOW_PREFIX = 'shadow.';

export interface FieldError {
  path: string;
  message: string;
}

/**
 * The errors a refusal names under `prefix` (DRAFT_PREFIX or SHADOW_PREFIX), renamed as the editor names its fields; `onlyDraft` says
 * whether they were all the refusal named.
 */
export function draftErrorsOf(error: unknown, prefix: string): { errors: FieldError[]; onlyDraft: boolean } {
  const named = error instanceof ApiError ? (error.problem.errors ?? []) : [];
  const errors = named
    .filter((field) => field.path.startsWith(prefix))
    .map((field) => ({ ...field, path: field.path.slice(prefix.length) }));
  return { errors, onlyDraft: errors.length > 0 && errors.length === named.length };
}
