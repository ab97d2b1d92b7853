import type { ChatPostMessageArguments, ViewsOpenArguments } from '@slack/web-api';
import type { ApprovalView } from '../approvals/approval-schemas.js';
import { describeOutcome, shownPayload } from '../notifications/approval-notice.js';

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
export const REJECT_MODAL = 'reject-feedback';
export const FEEDBACK_BLOCK = 'feedback';

/**
 * The message of an approval: the request with Approve and Reject buttons while it is pending
 * (votes so far included), and once settled anywhere the outcome, who decided and when, without
 * buttons. Rendered from the approval as it is now, so sending it again is harmless.
 */
export function approvalMessage(approval: ApprovalView, consoleUrl: string): SlackMessage {
  const pending = approval.status === 'pending';
  const payload = shownPayload(approval.payload, PAYLOAD_CHARACTERS);
  const outcome = pending ? describeOutcome(approval) : describeSettlement(approval);
  const facts = [
    `*Agent:* ${slackEscape(approval.agent ?? '(not given)')}`,
    `*Policy key:* ${slackEscape(approval.policyKey)}`,
    ...(approval.expiresAt ? [`*Expires:* ${slackDate(approval.expiresAt)}`] : []),
    ...(approval.quorum > 1 ? [`*Approvals needed:* ${approval.quorum}`] : []),
  ];
  const blocks: Blocks = [
    { type: 'header', text: { type: 'plain_text', text: slackEscapeWithin(`Approval needed: ${approval.action}`, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: facts.join('\n') } },
    { type: 'section', text: { type: 'mrkdwn', text: '```' + slackEscape(payload.text).replace(/```/g, "'''") + '```' } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `${slackEscape(outcome)} <${consoleUrl}|Open in console>` }] },
  ];
  if (pending) {
    blocks.push({
      type: 'actions',
      block_id: 'decision',
      elements: [
        { type: 'button', action_id: APPROVE_ACTION, value: approval.id, style: 'primary', text: { type: 'plain_text', text: 'Approve' } },
        { type: 'button', action_id: REJECT_ACTION, value: approval.id, style: 'danger', text: { type: 'plain_text', text: 'Reject' } },
      ],
    });
  }
  return { text: slackEscape(`${pending ? 'Approval needed' : outcome}: ${approval.action}`), blocks };
}

function describeSettlement(approval: ApprovalView): string {
  const decided = approval.status === 'approved' || approval.status === 'rejected';
  return decided && approval.feedback ? `${describeOutcome(approval)} Feedback: ${approval.feedback}` : describeOutcome(approval);
}

/** The modal Reject opens: optional feedback; its submission rejects. */
export function rejectModal(approval: ApprovalView, channelId: string | undefined): ViewsOpenArguments['view'] {
  return {
    type: 'modal',
    callback_id: REJECT_MODAL,
    private_metadata: JSON.stringify({ approvalId: approval.id, channelId }),
    title: { type: 'plain_text', text: 'Reject request' },
    submit: { type: 'plain_text', text: 'Reject' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `Reject *${slackEscape(approval.action)}* (${slackEscape(approval.policyKey)})?` } },
      {
        type: 'input',
        block_id: FEEDBACK_BLOCK,
        optional: true,
        label: { type: 'plain_text', text: 'Feedback for the agent' },
        element: { type: 'plain_text_input', action_id: FEEDBACK_BLOCK, multiline: true, max_length: 5000 },
      },
    ],
  };
}
