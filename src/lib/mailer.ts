import type { Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { onFirstUse } from './first-use.js';
import type { Logger } from './logger.js';
import type { Mailbox } from './mailbox.js';
import { neverConnected } from './never-connected.js';

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  /** An HTML alternative of `text`, for clients that show it. */
  html?: string;
}

export interface Mailer {
  /** `smtp`: mail leaves through SMTP_URL; `log`: there is no mail server, and mail is written to the log instead. */
  readonly transport: 'smtp' | 'log';
  /** Resolves once the server accepted the message; rejects on any transport error, so a job retries. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * The one way mail leaves: SMTP over `SMTP_URL`; without it the mail is written to the log, so
 * development needs no mail server. Outside production the log line holds the whole text (its
 * links are what a developer wants to click) and `mailbox` keeps it for the mailbox page; in
 * production the text, whose links are credentials, is logged at `debug` only.
 */
export function createMailer(
  config: { SMTP_URL?: string | undefined; MAIL_FROM: string; NODE_ENV: string },
  logger: Logger,
  mailbox: Mailbox | null = null,
): Mailer {
  if (!config.SMTP_URL) {
    const production = config.NODE_ENV === 'production';
    return {
      transport: 'log',
      async send({ to, subject, text }) {
        if (production) {
          logger.info({ mail: { to, subject } }, 'mail not sent: SMTP_URL is not set (LOG_LEVEL=debug shows its text)');
          logger.debug({ mail: { to, subject, text } }, 'text of the mail not sent');
          return;
        }
        logger.info({ mail: { to, subject } }, `mail not sent (SMTP_URL is not set): "${subject}" to ${to.join(', ')}\n${text}`);
        await mailbox?.keep({ to, subject, text });
      },
      close() {},
    };
  }
  const smtpUrl = config.SMTP_URL;
  // nodemailer is loaded with the first mail: most processes of a deployment never send one.
  let opened: Transporter<SMTPTransport.SentMessageInfo> | undefined;
  const connected = onFirstUse(async () => {
    const { createTransport } = await import('nodemailer');
    return (opened = createTransport(smtpUrl, { from: config.MAIL_FROM }));
  });
  return {
    transport: 'smtp',
    async send(message) {
      const info = await (await connected()).sendMail(message);
      // Some recipients refused while others accepted: a retry would mail the others again, so only log it.
      if (info.rejected.length > 0) logger.warn({ rejected: info.rejected, subject: message.subject }, 'mail refused for some recipients');
    },
    close() {
      opened?.close();
    },
  };
}

/** Failures that happen before the server could have taken the message: no connection, a refused login, sender or recipient. */
const BEFORE_DATA = new Set(['EDNS', 'EAUTH', 'EENVELOPE', 'EMESSAGE', 'ETLS']);

/**
 * Whether a failed send proves the message was not accepted, so that sending it again cannot
 * deliver it twice: the server answered with an SMTP error code (SMTP accepts a message only with
 * the 250 after its data), or the failure came before any data. A connection lost, or a timeout,
 * after the data was handed over proves nothing: the server may have accepted it.
 */
export function mailNotAccepted(error: unknown): boolean {
  const failure = error as { responseCode?: unknown; code?: unknown; originalCode?: unknown };
  if (typeof failure.responseCode === 'number' && failure.responseCode >= 400) return true;
  return BEFORE_DATA.has(String(failure.code)) || neverConnected(failure.originalCode ?? failure.code);
}
