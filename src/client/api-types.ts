/**
 * The API's request and response shapes, inferred from the zod schemas the server validates with,
 * so the client cannot drift from the routes. Type-only imports: nothing of the server reaches a
 * bundle that uses this client.
 */
import type { In, Out } from './approval-types.js';
import type * as audit from '../modules/audit/audit-schemas.js';
import type * as members from '../modules/members/member-schemas.js';
import type * as keys from '../modules/orgs/key-schemas.js';
import type * as policies from '../modules/policies/policy-schemas.js';
import type * as push from '../modules/push/push-schemas.js';
import type * as slack from '../modules/slack/slack-schemas.js';
import type * as teams from '../modules/teams/teams-schemas.js';
import type * as webhooks from '../modules/webhooks/webhook-schemas.js';

export type { ApprovalFeedEvent } from '../modules/approvals/approval-feed.js';
export type { AuditEventType, WebhookEventType } from '../modules/audit/audit-events.js';
export type { DecisionChannel } from '../modules/policies/policy-schemas.js';
export type { MemberRole, Scope } from '../modules/orgs/tenant.js';
export type { KeyOwner } from '../modules/orgs/key-owner-schema.js';

export type * from './approval-types.js';

export type AuditQuery = In<typeof audit.auditQuerySchema>;
export type AuditPage = Out<typeof audit.auditPageSchema>;
export type AuditEventView = Out<typeof audit.auditEventViewSchema>;
export type AuditVerification = Out<typeof audit.verificationSchema>;
export type AuditExportInput = In<typeof audit.auditExportCreateSchema>;
export type AuditExportView = Out<typeof audit.auditExportViewSchema>;

export type MemberView = Out<typeof members.memberViewSchema>;
export type MemberList = Out<typeof members.memberListSchema>;
export type MemberCreateInput = In<typeof members.memberCreateSchema>;
export type MemberCreated = Out<typeof members.memberCreatedSchema>;
export type MemberUpdateInput = In<typeof members.memberUpdateSchema>;
export type MemberSelfUpdateInput = In<typeof members.memberSelfUpdateSchema>;
export type DelegationInput = In<typeof members.delegationInputSchema>;
export type SignInInput = In<typeof members.signInSchema>;
export type InviteAcceptInput = In<typeof members.inviteAcceptSchema>;
export type InvitePreviewInput = In<typeof members.invitePreviewInputSchema>;
export type InvitePreview = Out<typeof members.invitePreviewSchema>;
export type SessionView = Out<typeof members.sessionViewSchema>;
export type SlackLinkInput = In<typeof slack.slackLinkInputSchema>;
export type SlackLinkPreview = Out<typeof slack.slackLinkPreviewSchema>;
export type TeamsLinkInput = In<typeof teams.teamsLinkInputSchema>;
export type PushSettings = Out<typeof push.pushSettingsSchema>;
export type PushSubscriptionInput = In<typeof push.pushSubscriptionInputSchema>;
export type PushSubscribed = Out<typeof push.pushSubscribedSchema>;

export type PolicyDocumentInput = In<typeof policies.policyDocumentSchema>;
export type PolicyRule = Out<typeof policies.policyRuleSchema>;
export type PolicyView = Out<typeof policies.policyViewSchema>;
export type PolicyList = Out<typeof policies.policyListSchema>;
export type PolicyListQuery = In<typeof policies.policyListQuerySchema>;
export type PolicyEvaluationInput = In<typeof policies.policyEvaluationInputSchema>;
export type PolicyEvaluation = Out<typeof policies.policyEvaluationSchema>;
export type PolicyVersionView = Out<typeof policies.policyVersionViewSchema>;
export type PolicyVersionList = Out<typeof policies.policyVersionListSchema>;
export type PolicyVersionListQuery = In<typeof policies.policyVersionListQuerySchema>;
export type PolicyReplayInput = In<typeof policies.policyReplayInputSchema>;
export type PolicyReplay = Out<typeof policies.policyReplaySchema>;
export type ShadowSummary = Out<typeof policies.shadowSummarySchema>;

export type ApiKeyView = Out<typeof keys.apiKeyViewSchema>;
export type ApiKeyList = Out<typeof keys.apiKeyListSchema>;
export type ApiKeyCreateInput = In<typeof keys.apiKeyCreateSchema>;
export type ApiKeyCreated = Out<typeof keys.apiKeyCreatedSchema>;

export type WebhookCreateInput = In<typeof webhooks.webhookCreateSchema>;
export type WebhookUpdateInput = In<typeof webhooks.webhookUpdateSchema>;
export type WebhookEndpointView = Out<typeof webhooks.webhookEndpointViewSchema>;
export type WebhookEndpointWithSecret = Out<typeof webhooks.webhookEndpointWithSecretSchema>;
export type WebhookEndpointList = Out<typeof webhooks.webhookEndpointListSchema>;
export type WebhookDeliveryView = Out<typeof webhooks.webhookDeliveryViewSchema>;
export type WebhookDeliveryList = Out<typeof webhooks.webhookDeliveryListSchema>;
