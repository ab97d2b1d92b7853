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

const SCHEMA = 'http://adaptivecards.io/schemas/adaptive-card.json';

type TextStyle = { size?: 'Large'; weight?: 'Bolder'; color?: 'Good' | 'Attention' | 'Warning'; fontType?: 'Monospace' };

/**
 * A line of text. Adaptive Cards read a TextBlock's and a FactSet's text as Markdown, so a
 * request's own text could make a link or a heading there; a TextRun of a RichTextBlock is shown
 * as it is. Everything that holds anything of a request, a vote or a member is written with this.
 */
function plain(...runs: (string | [string, TextStyle])[]) {
  return {
    type: 'RichTextBlock' as const,
    inlines: runs.map((run) =>
      typeof run === 'string' ? { type: 'TextRun' as const, text: run } : { type: 'TextRun' as const, text: run[0], ...run[1] },
    ),
  };
}

const fact = (title: string, value: string) => plain([`${title}: `, { weight: 'Bolder' }], value);

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
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  const revisionLines =
    approval.revision > 1
      ? [
          fact(`Revision ${approval.revision}, changed fields`, changes ? describeChangedFields(changes) : '(not recorded)'),
          ...(entry?.feedback
            ? [fact(`Changes asked${entry.requestedBy ? ` by ${describeDecider({ decidedBy: entry.requestedBy })}` : ''}`, entry.feedback)]
            : []),
          ...(entry?.note ? [fact("Agent's note", entry.note)] : []),
        ]
      : [];
  const outcome = pending ? describeOutcome(approval) : describeSettlement(approval);
  const outcomeStyle: TextStyle = pending ? {} : { weight: 'Bolder', color: approval.status === 'approved' ? 'Good' : 'Attention' };
  const body = [
    plain([
      `${pending ? 'Approval needed' : 'Approval'}: ${approval.action}${approval.revision > 1 ? ` (revision ${approval.revision})` : ''}`,
      { size: 'Large', weight: 'Bolder' },
    ]),
    ...revisionLines,
    fact('Agent', approval.agent ?? '(not given)'),
    fact('Policy key', approval.policyKey),
    ...(approval.stage ? [fact('Stage', `${approval.stage.index} (${approval.stage.name})`)] : []),
    ...(approval.expiresAt ? [fact('Expires', formatUtc(approval.expiresAt))] : []),
    ...(approval.quorum > 1 ? [fact('Approvals needed', String(approval.quorum))] : []),
    plain([shownPayload(approval.payload).text, { fontType: 'Monospace' }]),
    plain([outcome, outcomeStyle]),
    ...(notice ? [plain([notice.text, { color: 'Warning' }])] : []),
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
  const actions = [
    ...(notice?.link ? [{ type: 'Action.OpenUrl' as const, title: notice.link.title, url: notice.link.url }] : []),
    ...(pending
      ? [
          { type: 'Action.Execute' as const, title: 'Approve', verb: 'approve', data, style: 'positive' as const },
          { type: 'Action.Execute' as const, title: 'Reject', verb: 'reject', data, style: 'destructive' as const },
          { type: 'Action.Execute' as const, title: 'Request changes', verb: 'request_changes', data },
        ]
      : []),
    { type: 'Action.OpenUrl' as const, title: 'Open in console', url: consoleUrl },
  ];
  return { type: 'AdaptiveCard', $schema: SCHEMA, version: '1.5', body, actions } as IAdaptiveCard;
}

/** The card of an earlier revision once the request was revised: how that revision ended, without buttons. */
export function supersededCard(approval: ApprovalView, revision: number, consoleUrl: string): IAdaptiveCard {
  const next = approval.revisions.find((entry) => entry.revision === revision + 1);
  const asked = next?.requestedBy ? ` by ${describeDecider({ decidedBy: next.requestedBy })}` : '';
  return {
    type: 'AdaptiveCard',
    $schema: SCHEMA,
    version: '1.5',
    body: [
      plain([`${approval.action}${revision > 1 ? ` (revision ${revision})` : ''}`, { size: 'Large', weight: 'Bolder' }]),
      fact(`Changes requested${asked}`, next?.feedback ?? '(no feedback kept)'),
      plain(`The agent sent revision ${approval.revision}, posted as a new card.`),
    ],
    actions: [{ type: 'Action.OpenUrl', title: 'Open in console', url: consoleUrl }],
  } as IAdaptiveCard;
}

/** A reminder posted to the channel (docs/members-and-channels.md#reminders): text and a way to the request, no buttons. */
export function reminderCard(text: string, consoleUrl: string): IAdaptiveCard {
  return {
    type: 'AdaptiveCard',
    $schema: SCHEMA,
    version: '1.5',
    body: [plain([text, { weight: 'Bolder' }])],
    actions: [{ type: 'Action.OpenUrl', title: 'Open in console', url: consoleUrl }],
  } as IAdaptiveCard;
}
