import type { Express } from 'express';
import { Html, html } from '../lib/html.js';
import type { KeptMail, Mailbox } from '../lib/mailbox.js';
import { LINK_PAGE_HEADERS, pageLayout } from './links/link-pages.js';

export const MAILBOX_PATH = '/dev/mailbox';

const URL_PATTERN = /https?:\/\/[^\s<>"']+/g;

/** A mail's text with every URL in it a link, so that decision and invite links can be followed from the page. */
function linkedText(text: string): Html {
  const parts: Html[] = [];
  let last = 0;
  for (const match of text.matchAll(URL_PATTERN)) {
    parts.push(html`${text.slice(last, match.index)}<a href="${match[0]}">${match[0]}</a>`);
    last = match.index + match[0].length;
  }
  parts.push(html`${text.slice(last)}`);
  return html`${parts}`;
}

function mailboxPage(mails: KeptMail[]): string {
  const entries = mails.map(
    (mail) =>
      html`<article>
        <h2>${mail.subject}</h2>
        <p>To ${mail.to.join(', ')} · <time datetime="${mail.sentAt}">${mail.sentAt}</time></p>
        <pre>${linkedText(mail.text)}</pre>
      </article>`,
  );
  return pageLayout(
    'Mailbox',
    html`<h1>Mailbox</h1>
      <p class="notice">
        Development only: <code>SMTP_URL</code> is not set, so no mail leaves this machine. These are the mails that would have been sent,
        newest first (the last 200).
      </p>
      ${mails.length === 0 ? html`<p>No mail yet. Invite a member, or ask for an approval that waits for review.</p>` : entries}`,
  );
}

/**
 * The development mailbox (see docs/development.md): the mail kept instead of sent, with its links
 * clickable. It reads the mailbox in Redis, so it shows the mail of every process. Mounted only
 * when NODE_ENV is development; production never serves it.
 */
export function mountDevMailbox(app: Express, mailbox: Mailbox): void {
  app.get(MAILBOX_PATH, async (_req, res) => {
    res
      .status(200)
      .set(LINK_PAGE_HEADERS)
      .send(mailboxPage(await mailbox.list()));
  });
}
