import { createHash } from 'node:crypto';
import { formatCount } from '../../lib/display-count.js';
import { formatUtc } from '../../lib/display-time.js';
import { Html, html } from '../../lib/html.js';
import { MAX_CHANGES_FEEDBACK, type ApprovalView } from '../../modules/approvals/approval-schemas.js';
import type { LinkOutcome, LinkState } from '../../modules/links/decision-link-service.js';
import type { LinkVerdict } from '../../modules/links/decision-link-store.js';
import { describeOutcome, shownPayload } from '../../modules/notifications/approval-notice.js';

/** A rendered page and the status it is sent with. */
export interface LinkPage {
  status: number;
  body: string;
}

/** Pages show more of a payload than a mail does, and still stay a page. */
const PAGE_PAYLOAD_BYTES = 20_000;

const STYLE = `
body{margin:0;padding:24px 16px;background:#f4f5f7;font:15px/1.5 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1d2330}
main{max-width:640px;margin:0 auto;background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:24px}
.brand{margin:0 0 4px;color:#555;font-size:13px}
h1{margin:0 0 12px;font-size:22px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0 0 16px}
dt{color:#555;font-weight:600}dd{margin:0;overflow-wrap:anywhere}
pre{margin:0 0 16px;padding:12px;background:#f6f8fa;border:1px solid #e3e6ea;border-radius:6px;font-size:13px;white-space:pre-wrap;overflow-wrap:anywhere}
label{display:block;font-weight:600;margin:0 0 4px}
textarea{box-sizing:border-box;width:100%;min-height:90px;padding:8px;font:inherit;border:1px solid #b8bfc9;border-radius:6px}
button{margin-top:12px;padding:10px 20px;border:0;border-radius:6px;font:inherit;font-weight:600;color:#fff;cursor:pointer}
.approved{background:#1a7f37}.rejected{background:#cf222e}.changes_requested{background:#8a4b00}
.hint{margin:4px 0 0;color:#555;font-size:13px}
.notice{padding:12px;border-radius:6px;background:#eef3fb;border:1px solid #c9d7ee;margin:0 0 16px}
.warning{background:#fff4e5;border-color:#f0c78a}
a{color:#24518f}
article{border-top:1px solid #dde1e7;padding:12px 0}h2{margin:0;font-size:17px}
`;

/** Trusted markup made here, kept out of the templates so that its bytes are exactly the ones the CSP hash covers. */
const STYLE_ELEMENT = new Html(`<style>${STYLE}</style>`);

/** Every page's headers: nothing leaves for other origins, no caching, no indexing, no referrer (the URL is a bearer token). */
export const LINK_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'self'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-robots-tag': 'noindex',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/** A page of the web process's own (decision links, the development mailbox): its markup, with the style the CSP allows. */
export function pageLayout(title: string, content: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>${title} · Approval Gate</title>
        ${STYLE_ELEMENT}
      </head>
      <body>
        <main>
          <p class="brand">Approval Gate</p>
          ${content}
        </main>
      </body>
    </html>`.text;
}

function facts(approval: ApprovalView): Html {
  const row = (label: string, value: string | null | undefined) =>
    value
      ? html`<dt>${label}</dt>
          <dd>${value}</dd>`
      : '';
  return html`<dl>
      ${row('Action', approval.action)}${row('Agent', approval.agent ?? '(not given)')}${row('Policy key', approval.policyKey)}${row(
        'On behalf of',
        approval.onBehalfOf,
      )}${row('Expires at', approval.expiresAt && formatUtc(approval.expiresAt))}${row('Request id', approval.id)}
    </dl>
    <p><strong>Payload</strong></p>
    <pre>${shownPayload(approval.payload, PAGE_PAYLOAD_BYTES).text}</pre>
    ${
      approval.context
        ? html`<p><strong>Context</strong></p>
            <pre>${shownPayload(approval.context, PAGE_PAYLOAD_BYTES).text}</pre>`
        : ''
    }`;
}

const consoleLink = (consoleUrl: string) => html`<p><a href="${consoleUrl}">Open the request in the console</a></p>`;

const VERDICT_WORDS: Record<LinkVerdict, { verb: string; question: string; past: string }> = {
  approved: { verb: 'Approve', question: 'Approve this request?', past: 'Request approved' },
  rejected: { verb: 'Reject', question: 'Reject this request?', past: 'Request rejected' },
  changes_requested: { verb: 'Request changes', question: 'Request changes to this request?', past: 'Changes requested' },
};

/** A status as a page's heading says it. */
const STATUS_WORDS: Record<ApprovalView['status'], string> = {
  pending: 'pending',
  approved: 'approved',
  rejected: 'rejected',
  expired: 'expired',
  escalated: 'escalated',
  changes_requested: 'waiting for the changes a reviewer asked for',
};

/** The feedback field: optional with approve and reject, required with a request for changes (what the agent revises by). */
function feedbackField(verdict: LinkVerdict): Html {
  if (verdict !== 'changes_requested') {
    return html`<label for="feedback">Feedback for the agent (optional)</label>
      <textarea id="feedback" name="feedback" maxlength="5000"></textarea>`;
  }
  return html`<label for="feedback">What should change? (required)</label>
    <textarea
      id="feedback"
      name="feedback"
      required
      minlength="1"
      maxlength="${String(MAX_CHANGES_FEEDBACK)}"
      aria-describedby="feedback-hint"
    ></textarea>
    <p id="feedback-hint" class="hint">
      Up to ${formatCount(MAX_CHANGES_FEEDBACK)} characters. The agent receives it and may send a revised request, which you are told about
      again.
    </p>`;
}

/** The revision a page is about, and what the revision before it was asked to change, once there was one. */
function revisionNotice(approval: ApprovalView): Html | string {
  if (approval.revision <= 1) return '';
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  const sentences = [
    `Revision ${approval.revision} of this request.`,
    ...(entry?.feedback ? [`Changes were asked for: “${entry.feedback}”`] : []),
    ...(entry?.note ? [`The agent's note: “${entry.note}”`] : []),
  ];
  return html`<p class="notice">${sentences.join(' ')}</p>`;
}

/** The confirmation page of an open link: the request and the form that decides it. */
function confirmationPage(state: Extract<LinkState, { kind: 'open' }>, consoleUrl: string, problem?: Html): string {
  const { verb, question } = VERDICT_WORDS[state.verdict];
  return pageLayout(
    `${verb} ${state.approval.action}?`,
    html`<h1>${question}</h1>
      ${problem ?? ''}
      <p>You decide as <strong>${state.memberEmail}</strong>. Nothing happens until you press the button.</p>
      ${state.approval.quorum > 1 || state.approval.stage ? html`<p class="notice">${describeOutcome(state.approval)}</p>` : ''}
      ${revisionNotice(state.approval)} ${facts(state.approval)}
      <form method="post">
        <input type="hidden" name="nonce" value="${state.nonce}" />
        ${feedbackField(state.verdict)}
        <button type="submit" class="${state.verdict}">${verb}</button>
      </form>
      ${consoleLink(consoleUrl)}`,
  );
}

function settledPage(approval: ApprovalView, consoleUrl: string, lead: string): string {
  return pageLayout(
    `${approval.action}: ${STATUS_WORDS[approval.status]}`,
    html`<h1>This request is ${STATUS_WORDS[approval.status]}</h1>
      <p class="notice">${lead} ${describeOutcome(approval)}${approval.feedback ? html`<br />Feedback: ${approval.feedback}` : ''}</p>
      ${facts(approval)}${consoleLink(consoleUrl)}`,
  );
}

const GONE: Record<Extract<LinkState, { kind: 'gone' }>['reason'], { title: string; text: string }> = {
  unknown: {
    title: 'This link does not work',
    text: 'It may be cut short or mistyped, the request it was for may be long past, or it was revised since: the mail about a new revision has links of its own. Open the console to see the requests waiting for you.',
  },
  expired: {
    title: 'This request has expired',
    text: 'Nobody decided it before its deadline, so it can no longer be decided here. The console shows what became of it.',
  },
  used: {
    title: 'This link was used already',
    text: 'Your vote on this request is recorded; it waits for the other reviewers it needs. The console shows where it stands.',
  },
  revised: {
    title: 'This request was revised',
    text: 'A reviewer asked for changes and the agent sent a new revision, so this link no longer decides anything. The mail about the new revision has links of its own, and the console shows it.',
  },
};

/** A page that says one thing: its title as the heading, a message, and what follows (the request, a link). */
function messagePage(status: number, title: string, message: Html, after: Html | string = ''): LinkPage {
  return {
    status,
    body: pageLayout(
      title,
      html`<h1>${title}</h1>
        ${message}${after}`,
    ),
  };
}

function gonePage(reason: keyof typeof GONE, consolePage: string): LinkPage {
  const { title, text } = GONE[reason];
  return messagePage(410, title, html`<p>${text}</p>`, consoleLink(consolePage));
}

/** GET /d/<token>: what the link shows; never changes anything. */
export function inspectionPage(state: LinkState, urls: { console: (approvalId: string) => string; inbox: string }): LinkPage {
  switch (state.kind) {
    case 'gone':
      return gonePage(state.reason, urls.inbox);
    case 'settled':
      return { status: 200, body: settledPage(state.approval, urls.console(state.approval.id), 'It was decided already.') };
    case 'open':
      return { status: 200, body: confirmationPage(state, urls.console(state.approval.id)) };
  }
}

/** POST /d/<token>: what confirming did. */
export function outcomePage(outcome: LinkOutcome, urls: { console: (approvalId: string) => string; inbox: string }): LinkPage {
  switch (outcome.kind) {
    case 'gone':
      return gonePage(outcome.reason, urls.inbox);
    case 'settled':
      return {
        status: 409,
        body: settledPage(outcome.approval, urls.console(outcome.approval.id), 'Nothing was changed: it was decided already.'),
      };
    case 'bad_nonce':
      return {
        status: 422,
        body: confirmationPage(
          outcome.state,
          urls.console(outcome.state.approval.id),
          html`<p class="notice warning">
            This confirmation did not come from this link's page, so nothing was decided. Check the request below and confirm here.
          </p>`,
        ),
      };
    case 'feedback_required':
      return {
        status: 422,
        body: confirmationPage(
          outcome.state,
          urls.console(outcome.state.approval.id),
          html`<p class="notice warning" role="alert">${outcome.problem} Nothing was decided.</p>`,
        ),
      };
    case 'refused':
      return messagePage(
        403,
        'You may not decide this request',
        html`<p class="notice warning">${outcome.refusal.message}</p>`,
        html`${facts(outcome.approval)}${consoleLink(urls.console(outcome.approval.id))}`,
      );
    case 'already_voted':
      return messagePage(
        409,
        'You voted on this request already',
        html`<p class="notice">Each reviewer votes once; nothing was changed. ${describeOutcome(outcome.approval)}</p>`,
        consoleLink(urls.console(outcome.approval.id)),
      );
    case 'decided': {
      const { approval, verdict } = outcome;
      const title = approval.status === 'pending' ? 'Your approval is recorded' : VERDICT_WORDS[verdict].past;
      return messagePage(
        200,
        title,
        html`<p class="notice">${describeOutcome(approval)}</p>`,
        html`${facts(approval)}${consoleLink(urls.console(approval.id))}`,
      );
    }
  }
}

/** A form this page did not make (feedback too long, say): 422, nothing changes. */
export function invalidFormPage(message: string): LinkPage {
  return messagePage(422, 'The form could not be used', html`<p>${message} Nothing was decided.</p>`);
}

/** Anything unexpected: no details, no stack trace; the log has them. */
export function failurePage(): LinkPage {
  return messagePage(
    500,
    'Something went wrong',
    html`<p>The service could not handle this link just now; it has been logged. Open the link again in a moment.</p>`,
  );
}
