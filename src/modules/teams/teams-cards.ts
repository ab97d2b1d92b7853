import type { IAdaptiveCard } from '@microsoft/teams.cards';
import { formatUtc } from '../../lib/display-time.js';
import { MAX_CHANGES_FEEDBACK, type ApprovalView } from '../approvals/approval-schemas.js';
import { describeChangedFields, type ChangedFields } from '../approvals/payload-changes.js';
import { describeDecider, describeOutcome, describeSettlement, shownPayload } from '../notifications/approval-notice.js';

/** The verbs of the card's Action.Execute buttons, and the verdict each votes. */
export const CARD_VERBS = { approve: 'approved', reject: 'rejected', request_changes: 'changes_requested' } as const;
export type CardVerb = keyof typeof CARD_VERBS;

/** The id of the card's feedback input: Teams merges its value into the action's data. */
export const FEEDBACK_INPUT = 'feedback';

/**
 * Adaptive Cards read TextBlock and FactSet text as Markdown: a request's own text could make a
 * link or a heading. Every text that holds anything of a request, a vote or a member goes
 * through this.
 */
export function cardEscape(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|~]/g, '\\$&');
}

/** What a card says to the one person who pressed a button (a refusal, a link to follow). */
export interface CardNotice {
  text: string;
  link?: { title: string; url: string };
}

/**
 * The card of an approval: the request with Approve, Reject and Request changes (Universal
 * Actions, feedback typed into the card) while it is pending, and once settled anywhere the
 * outcome, who decided and when, without buttons. Rendered from the approval as it is now, so
 * sending it again is harmless; `notice` is only in the card answered to one person's press.
 */
export function approvalCard(
  approval: ApprovalView,
  consoleUrl: string,
  changes: ChangedFields | null = null,
  notice: CardNotice | null = null,
): IAdaptiveCard {
  const pending = approval.status === 'pending';
  const facts = [
    { title: 'Agent', value: cardEscape(approval.agent ?? '(not given)') },
    { title: 'Policy key', value: cardEscape(approval.policyKey) },
    ...(approval.expiresAt ? [{ title: 'Expires', value: cardEscape(formatUtc(approval.expiresAt)) }] : []),
    ...(approval.quorum > 1 ? [{ title: 'Approvals needed', value: String(approval.quorum) }] : []),
  ];
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  const revisionLines =
    approval.revision > 1
      ? [
          `**Revision ${approval.revision}** · Changed fields: ${changes ? cardEscape(describeChangedFields(changes)) : '(not recorded)'}`,
          ...(entry?.feedback
            ? [
                `Changes asked${entry.requestedBy ? ` by ${cardEscape(describeDecider({ decidedBy: entry.requestedBy }))}` : ''}: ${cardEscape(entry.feedback)}`,
              ]
            : []),
          ...(entry?.note ? [`Agent's note: ${cardEscape(entry.note)}`] : []),
        ]
      : [];
  const outcome = pending ? describeOutcome(approval) : describeSettlement(approval);
  const body: IAdaptiveCard['body'] = [
    {
      type: 'TextBlock',
      text: cardEscape(
        `${pending ? 'Approval needed' : 'Approval'}: ${approval.action}${approval.revision > 1 ? ` (revision ${approval.revision})` : ''}`,
      ),
      size: 'Large',
      weight: 'Bolder',
      wrap: true,
    },
    ...revisionLines.map((text) => ({ type: 'TextBlock' as const, text, wrap: true })),
    { type: 'FactSet', facts },
    { type: 'TextBlock', text: cardEscape(shownPayload(approval.payload).text), fontType: 'Monospace', wrap: true },
    {
      type: 'TextBlock',
      text: cardEscape(outcome),
      wrap: true,
      weight: pending ? 'Default' : 'Bolder',
      color: pending ? 'Default' : approval.status === 'approved' ? 'Good' : 'Attention',
    },
    ...(notice ? [{ type: 'TextBlock' as const, text: cardEscape(notice.text), wrap: true, color: 'Warning' as const }] : []),
    ...(pending
      ? [
          {
            type: 'Input.Text' as const,
            id: FEEDBACK_INPUT,
            isMultiline: true,
            maxLength: MAX_CHANGES_FEEDBACK,
            label: 'Feedback (needed to request changes)',
          },
        ]
      : []),
  ];
  const data = { approvalId: approval.id, revision: approval.revision };
  const actions: IAdaptiveCard['actions'] = [
    ...(notice?.link ? [{ type: 'Action.OpenUrl' as const, title: notice.link.title, url: notice.link.url }] : []),
    ...(pending
      ? [
          { type: 'Action.Execute' as const, title: 'Approve', verb: 'approve', data, style: 'positive' as const },
          { type: 'Action.Execute' as const, title: 'Reject', verb: 'reject', data, style: 'destructive' as const },
          { type: 'Action.Execute' as const, title: 'Request changes', verb: 'request_changes', data },
        ]
      : []),
    { type: 'Action.OpenUrl', title: 'Open in console', url: consoleUrl },
  ];
  return {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.5',
    body,
    actions,
  } as IAdaptiveCard;
}

/** The card of an earlier revision once the request was revised: how that revision ended, without buttons. */
export function supersededCard(approval: ApprovalView, revision: number, consoleUrl: string): IAdaptiveCard {
  const next = approval.revisions.find((entry) => entry.revision === revision + 1);
  const asked = next?.requestedBy ? ` by ${describeDecider({ decidedBy: next.requestedBy })}` : '';
  return {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.5',
    body: [
      {
        type: 'TextBlock',
        text: cardEscape(`${approval.action}${revision > 1 ? ` (revision ${revision})` : ''}`),
        size: 'Large',
        weight: 'Bolder',
        wrap: true,
      },
      { type: 'TextBlock', text: cardEscape(`Changes requested${asked}: ${next?.feedback ?? '(no feedback kept)'}`), wrap: true },
      { type: 'TextBlock', text: cardEscape(`The agent sent revision ${approval.revision}, posted as a new card.`), wrap: true },
    ],
    actions: [{ type: 'Action.OpenUrl', title: 'Open in console', url: consoleUrl }],
  } as IAdaptiveCard;
}
