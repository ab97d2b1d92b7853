import { formatUtc } from '../../lib/display-time.js';
import { html } from '../../lib/html.js';
import type { MailMessage } from '../../lib/mailer.js';
import type { ApprovalView } from '../approvals/approval-schemas.js';
import type { DecisionLinks } from '../links/decision-link-service.js';
import { describeChangedFields, type ChangedFields } from '../approvals/payload-changes.js';
import { describeStage, shownPayload } from './approval-notice.js';

export interface ApprovalMailInput {
  approval: ApprovalView;
  /** What the approval's revision changed from the one before; null for the original. */
  changes: ChangedFields | null;
  links: DecisionLinks & { console: string; settings: string };
  /** Set for a reminder (docs/members-and-channels.md#reminders): the request is still waiting for this member. */
  reminder?: boolean;
}

/** The lines a mail of a revision adds: its number, the fields it changed, the feedback that asked for it, the agent's note. */
function revisionFacts(approval: ApprovalView, changes: ChangedFields | null): [label: string, value: string][] {
  if (approval.revision <= 1) return [];
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  return [
    ['Revision', String(approval.revision)],
    ['Changed fields', changes ? describeChangedFields(changes) : '(not recorded)'],
    ...(entry?.feedback ? [['Changes asked', entry.feedback] as [string, string]] : []),
    ...(entry?.note ? [["Agent's note", entry.note] as [string, string]] : []),
  ];
}

/** The mail that asks a member to decide (see docs/members-and-channels.md): text and HTML, every value escaped in the HTML. */
export function approvalMail({ approval, changes, links, reminder = false }: ApprovalMailInput): Omit<MailMessage, 'to'> {
  const payload = shownPayload(approval.payload);
  const agent = approval.agent ?? '(not given)';
  const revision = revisionFacts(approval, changes);
  const stage = describeStage(approval);
  const asked =
    revision.length > 0
      ? `A reviewer asked for changes, and the agent sent revision ${approval.revision} of "${approval.action}": you may decide it.`
      : approval.stage && approval.stage.index > 1
        ? `The reviewers of stage ${approval.stage.index - 1} approved "${approval.action}", and its next stage is yours: you may decide it.`
        : `An agent asks to run "${approval.action}", and you may decide it.`;
  const lead = reminder
    ? `Reminder: this request is still waiting, and you have not decided it yet. ${asked} It expires at ${approval.expiresAt ? formatUtc(approval.expiresAt) : '(never)'}.`
    : asked;
  const title = `${reminder ? 'Reminder: approval' : 'Approval'} needed: ${approval.action}${revision.length > 0 ? ` (revision ${approval.revision})` : ''}${stage ? ` · ${stage}` : ''}`;
  const text = [
    lead,
    '',
    ...revision.map(([label, value]) => `${`${label}:`.padEnd(16)}${value}`),
    ...(revision.length > 0 ? [''] : []),
    `Action:      ${approval.action}`,
    `Agent:       ${agent}`,
    `Policy key:  ${approval.policyKey}`,
    ...(stage ? [`Stage:       ${stage.slice('Stage '.length)}`] : []),
    `Expires at:  ${approval.expiresAt ? formatUtc(approval.expiresAt) : '(never)'}`,
    ...(approval.quorum > 1 ? [`Approvals:   ${approval.quorum} needed`] : []),
    '',
    'Payload:',
    payload.text,
    '',
    `Approve:         ${links.approve}`,
    `Reject:          ${links.reject}`,
    `Request changes: ${links.requestChanges}`,
    `Open in the console: ${links.console}`,
    '',
    'Each link opens a page that asks you to confirm; it works once, until the request expires.',
    `You get this mail as a reviewer of the request. Turn these mails off in your settings: ${links.settings}`,
  ].join('\n');

  const row = (label: string, value: string) =>
    html`<tr>
      <th style="text-align:left;padding:4px 12px 4px 0;color:#555;font-weight:600;vertical-align:top">${label}</th>
      <td style="padding:4px 0">${value}</td>
    </tr>`;
  const button = (label: string, href: string, color: string) =>
    html`<a
      href="${href}"
      style="display:inline-block;margin:0 8px 8px 0;padding:10px 18px;border-radius:6px;background:${color};color:#fff;text-decoration:none;font-weight:600"
      >${label}</a
    >`;
  const body = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width" />
        <title>${title}</title>
      </head>
      <body
        style="margin:0;padding:24px;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1d2330"
      >
        <div style="max-width:640px;margin:0 auto;background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:24px">
          <p style="margin:0 0 4px;color:#555;font-size:13px">Approval Gate</p>
          <h1 style="margin:0 0 16px;font-size:20px">${title}</h1>
          <p style="margin:0 0 16px">${lead}</p>
          <table style="border-collapse:collapse;margin:0 0 16px;font-size:14px">
            ${revision.map(([label, value]) => row(label, value))}${row('Action', approval.action)}${row('Agent', agent)}${row('Policy key', approval.policyKey)}${stage ? row('Stage', stage.slice('Stage '.length)) : ''}${row('Expires at', approval.expiresAt ? formatUtc(approval.expiresAt) : '')}${approval.quorum > 1 ? row('Approvals', `${approval.quorum} needed`) : ''}
          </table>
          <p style="margin:0 0 4px;font-weight:600;font-size:14px">Payload</p>
          <pre
            style="margin:0 0 20px;padding:12px;background:#f6f8fa;border:1px solid #e3e6ea;border-radius:6px;font-size:12px;white-space:pre-wrap;word-break:break-word"
          >
${payload.text}</pre>
          <div>
            ${button('Approve', links.approve, '#1a7f37')}${button('Reject', links.reject, '#cf222e')}${button('Request changes', links.requestChanges, '#8a4b00')}${button('Open in console', links.console, '#44546a')}
          </div>
          <p style="margin:16px 0 0;color:#555;font-size:12px">
            Each link opens a page that asks you to confirm; it works once, until the request expires. You get this mail as a reviewer of
            the request. <a href="${links.settings}" style="color:#44546a">Turn these mails off</a>.
          </p>
        </div>
      </body>
    </html>`;
  return { subject: title, text, html: body.text };
}
