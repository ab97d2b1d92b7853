import type { ChatPostMessageArguments, ViewsOpenArguments } from '@slack/web-api';
import type { ApprovalView } from '../approvals/approval-schemas.js';
import { MAX_CHANGES_FEEDBACK, type VoteVerdict } from '../approvals/approval-schemas.js';
import { describeChangedFields, type ChangedFields } from '../approvals/payload-changes.js';
import { describeDecider, describeOutcome, describeSettlement, shownPayload } from '../notifications/approval-notice.js';

type Blocks = Extract<ChatPostMessageArguments, { blocks: unknown }>['blocks'];

/** What chat.postMessage and chat.update send for an approval: fallback text and blocks. */
export interface SlackMessage {
  text: string;
  blocks: Blocks;
}

/** A section's text is at most 3,000 characters; the payload's code block stays under it. */
const PAYLOAD_CHARACTERS = 2_500;

/**
 * Slack treats &, < and > as control characters in every text it is sent (a message's fallback
 * `text`, mrkdwn and plain_text objects, ephemeral messages): `<!channel>` mentions everyone and
 * `<http://evil|bank>` disguises a link. Every text that holds anything of a request, a vote or a
 * member goes through this (see docs/members-and-channels.md).
 */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Escaped, then cut to `max` characters without leaving half an entity at the end. */
function slackEscapeWithin(text: string, max: number): string {
  const escaped = slackEscape(text);
  return escaped.length <= max ? escaped : escaped.slice(0, max).replace(/&[a-z]{0,3}$/, '');
}

/** The Block Kit date token: shown in each reader's own time zone, with the ISO time as fallback. */
function slackDate(iso: string): string {
  return `<!date^${Math.floor(Date.parse(iso) / 1000)}^{date_short_pretty} {time}|${iso}>`;
}

export const APPROVE_ACTION = 'approve';
export const REJECT_ACTION = 'reject';
export const CHANGES_ACTION = 'request_changes';
export const REJECT_MODAL = 'reject-feedback';
export const CHANGES_MODAL = 'changes-feedback';
export const FEEDBACK_BLOCK = 'feedback';
export const DECISION_BLOCK = 'decision';

/** A request's own text quoted in a message (feedback, a note) is cut here, so that a section stays under 3,000 characters. */
const QUOTE_CHARACTERS = 900;

function quote(text: string): string {
  return slackEscape(text.length > QUOTE_CHARACTERS ? `${text.slice(0, QUOTE_CHARACTERS - 1)}…` : text);
}

/**
 * What a revision's message adds (see docs/members-and-channels.md#revised-requests): its number,
 * the fields it changed, the feedback that asked for it and the agent's note.
 */
function revisionBlock(approval: ApprovalView, changes: ChangedFields | null): Blocks {
  if (approval.revision <= 1) return [];
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  const lines = [
    `*Revision ${approval.revision}* · *Changed fields:* ${changes ? slackEscape(describeChangedFields(changes)) : '(not recorded)'}`,
    ...(entry?.feedback
      ? [
          `*Changes asked${entry.requestedBy ? ` by ${slackEscape(describeDecider({ decidedBy: entry.requestedBy }))}` : ''}:* ${quote(entry.feedback)}`,
        ]
      : []),
    ...(entry?.note ? [`*Agent's note:* ${quote(entry.note)}`] : []),
  ];
  return [{ type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } }];
}

/**
 * The message of an approval: the request with Approve, Reject and Request changes buttons while it is pending
 * (votes so far included), and once settled anywhere the outcome, who decided and when, without
 * buttons. Rendered from the approval as it is now, so sending it again is harmless.
 */
export function approvalMessage(approval: ApprovalView, consoleUrl: string, changes: ChangedFields | null = null): SlackMessage {
  const pending = approval.status === 'pending';
  const payload = shownPayload(approval.payload, PAYLOAD_CHARACTERS);
  const outcome = pending ? describeOutcome(approval) : describeSettlement(approval);
  const facts = [
    `*Agent:* ${slackEscape(approval.agent ?? '(not given)')}`,
    `*Policy key:* ${slackEscape(approval.policyKey)}`,
    ...(approval.stage ? [`*Stage:* ${approval.stage.index} (${slackEscape(approval.stage.name)})`] : []),
    ...(approval.expiresAt ? [`*Expires:* ${slackDate(approval.expiresAt)}`] : []),
    ...(approval.quorum > 1 ? [`*Approvals needed:* ${approval.quorum}`] : []),
  ];
  const blocks: Blocks = [
    {
      type: 'header',
      text: { type: 'plain_text', text: slackEscapeWithin(`Approval needed: ${approval.action}${revisionSuffix(approval)}`, 150) },
    },
    ...revisionBlock(approval, changes),
    { type: 'section', text: { type: 'mrkdwn', text: facts.join('\n') } },
    { type: 'section', text: { type: 'mrkdwn', text: '```' + slackEscape(payload.text).replace(/```/g, "'''") + '```' } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `${slackEscape(outcome)} <${consoleUrl}|Open in console>` }] },
  ];
  if (pending) {
    blocks.push({
      type: 'actions',
      // The revision the buttons are for: a press on an earlier revision's message decides nothing.
      block_id: `${DECISION_BLOCK}:${approval.revision}`,
      elements: [
        { type: 'button', action_id: APPROVE_ACTION, value: approval.id, style: 'primary', text: { type: 'plain_text', text: 'Approve' } },
        { type: 'button', action_id: REJECT_ACTION, value: approval.id, style: 'danger', text: { type: 'plain_text', text: 'Reject' } },
        { type: 'button', action_id: CHANGES_ACTION, value: approval.id, text: { type: 'plain_text', text: 'Request changes' } },
      ],
    });
  }
  return { text: slackEscape(`${pending ? 'Approval needed' : outcome}: ${approval.action}${revisionSuffix(approval)}`), blocks };
}

const revisionSuffix = (approval: ApprovalView) => (approval.revision > 1 ? ` (revision ${approval.revision})` : '');

/**
 * The message of an earlier revision once the request was revised: how that revision ended (the
 * request for changes that the revision answered), without buttons; the revision has a post of its own.
 */
export function supersededMessage(approval: ApprovalView, revision: number, consoleUrl: string): SlackMessage {
  const next = approval.revisions.find((entry) => entry.revision === revision + 1);
  const asked = next?.requestedBy ? ` by ${describeDecider({ decidedBy: next.requestedBy })}` : '';
  const lines = [
    `*Changes requested${slackEscape(asked)}:* ${next?.feedback ? quote(next.feedback) : '(no feedback kept)'}`,
    `The agent sent revision ${approval.revision}, posted as a new message.`,
  ];
  return {
    text: slackEscape(`Changes requested: ${approval.action}${revision > 1 ? ` (revision ${revision})` : ''}`),
    blocks: [
      {
        type: 'header',
        text: { type: 'plain_text', text: slackEscapeWithin(`${approval.action}${revision > 1 ? ` (revision ${revision})` : ''}`, 150) },
      },
      { type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `<${consoleUrl}|Open in console>` }] },
    ],
  };
}

/** The modals a button opens: what each asks, and the verdict its submission votes. */
export const FEEDBACK_MODALS = {
  [REJECT_MODAL]: {
    verdict: 'rejected',
    title: 'Reject request',
    submit: 'Reject',
    question: 'Reject',
    label: 'Feedback for the agent',
    optional: true,
    maxLength: 5000,
  },
  [CHANGES_MODAL]: {
    verdict: 'changes_requested',
    title: 'Request changes',
    submit: 'Request changes',
    question: 'Ask the agent to change',
    label: 'What should change?',
    optional: false,
    maxLength: MAX_CHANGES_FEEDBACK,
  },
} as const satisfies Record<string, { verdict: VoteVerdict; optional: boolean; maxLength: number } & Record<string, unknown>>;
export type FeedbackModal = keyof typeof FEEDBACK_MODALS;

/**
 * The modal Reject (optional feedback) or Request changes (required feedback) opens; its
 * submission votes at the revision the message showed.
 */
export function feedbackModal(kind: FeedbackModal, approval: ApprovalView, channelId: string | undefined): ViewsOpenArguments['view'] {
  const modal = FEEDBACK_MODALS[kind];
  return {
    type: 'modal',
    callback_id: kind,
    private_metadata: JSON.stringify({ approvalId: approval.id, channelId, revision: approval.revision }),
    title: { type: 'plain_text', text: modal.title },
    submit: { type: 'plain_text', text: modal.submit },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: `${modal.question} *${slackEscape(approval.action)}* (${slackEscape(approval.policyKey)})${revisionSuffix(approval)}?`,
        },
      },
      {
        type: 'input',
        block_id: FEEDBACK_BLOCK,
        optional: modal.optional,
        label: { type: 'plain_text', text: modal.label },
        element: { type: 'plain_text_input', action_id: FEEDBACK_BLOCK, multiline: true, max_length: modal.maxLength },
      },
    ],
  };
}
