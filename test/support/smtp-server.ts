import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope recipients, as the server saw them in RCPT TO. */
  to: string[];
  from: string;
  subject: string;
  text: string;
  /** The HTML part, when the mail has one. */
  html: string | null;
}

export interface SmtpServerOptions {
  /** Refuses every recipient, or those this picks (550 for all, 451 for picked ones: try later). */
  refuseRecipients?: boolean | ((address: string) => boolean);
  /**
   * Mails it keeps without ever answering the end of their data, as a server would that a sender
   * lost mid-send: received, but the sender never learns it. Answered when the server closes.
   */
  hold?: (mail: ReceivedMail) => boolean;
}

/** A real SMTP server on an ephemeral port that keeps what it receives (parsed by mailparser). */
export async function startSmtpServer({ refuseRecipients = false, hold = () => false }: SmtpServerOptions = {}) {
  const received: ReceivedMail[] = [];
  const held: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (refuseRecipients === true) return callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
      if (refuseRecipients && refuseRecipients(address.address))
        return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      callback(null);
    },
    onData(stream, session, callback) {
      const to = session.envelope.rcptTo.map((address) => address.address);
      simpleParser(stream).then(
        (parsed) => {
          const mail: ReceivedMail = {
            to,
            from: parsed.from?.value.map(({ name, address }) => (name ? `${name} <${address}>` : (address ?? ''))).join(', ') ?? '',
            subject: parsed.subject ?? '',
            text: (parsed.text ?? '').replace(/\r\n/g, '\n'),
            html: typeof parsed.html === 'string' ? parsed.html : null,
          };
          received.push(mail);
          if (hold(mail)) held.push(() => callback());
          else callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        held.splice(0).forEach((answer) => answer());
        server.close(resolve);
      }),
  };
}

export type SmtpServer = Awaited<ReturnType<typeof startSmtpServer>>;
