import { createTransport } from 'nodemailer';
import type { Config } from '../config.js';
import type { Logger } from './logger.js';

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the server accepted the message; rejects on any transport error, so a job retries. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/** SMTP over `SMTP_URL`; without it the mail is written to the log, so development needs no mail server. */
export function createMailer(config: Pick<Config, 'SMTP_URL' | 'MAIL_FROM'>, logger: Logger): Mailer {
  if (!config.SMTP_URL) {
    return {
      async send({ to, subject, text }) {
        logger.info({ mail: { to, subject } }, 'mail not sent: SMTP_URL is not set (LOG_LEVEL=debug shows its text)');
        logger.debug({ mail: { to, subject, text } }, 'text of the mail not sent');
      },
      close() {},
    };
  }
  const transport = createTransport(config.SMTP_URL, { from: config.MAIL_FROM });
  return {
    async send(message) {
      const info = await transport.sendMail(message);
      // Some recipients refused while others accepted: a retry would mail the others again, so only log it.
      if (info.rejected.length > 0) logger.warn({ rejected: info.rejected, subject: message.subject }, 'mail refused for some recipients');
    },
    close() {
      transport.close();
    },
  };
}
