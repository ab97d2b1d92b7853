import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope recipients, as the server saw them in RCPT TO. */
  to: string[];
  from: string;
  subject: string;
  text: string;
}

/** A real SMTP server on an ephemeral port that keeps what it receives, or refuses every recipient. */
export async function startSmtpServer({ refuseRecipients = false } = {}) {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      callback(refuseRecipients ? Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }) : null);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const to = session.envelope.rcptTo.map((address) => address.address);
        received.push({ to, ...parseMessage(Buffer.concat(chunks).toString('utf8')) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(resolve)) };
}

/** Just enough MIME for a single-part text mail from nodemailer: headers (RFC 2047 words too), and a 7bit, QP or base64 body. */
function parseMessage(raw: string): Omit<ReceivedMail, 'to'> {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split).replace(/\r\n(?=[ \t])/g, '');
  const body = raw.slice(split + 4);
  const header = (name: string) =>
    headers
      .split('\r\n')
      .find((line) => line.toLowerCase().startsWith(`${name}:`))
      ?.slice(name.length + 1)
      .trim() ?? '';
  const encoding = header('content-transfer-encoding').toLowerCase();
  const text =
    encoding === 'quoted-printable' ? decodeQuotedPrintable(body.replace(/=\r\n/g, '')) : encoding === 'base64' ? decodeBase64(body) : body;
  return { from: decodeWords(header('from')), subject: decodeWords(header('subject')), text: text.replace(/\r\n/g, '\n') };
}

const decodeQuotedPrintable = (value: string) =>
  Buffer.from(
    value.replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  ).toString('utf8');
const decodeBase64 = (value: string) => Buffer.from(value, 'base64').toString('utf8');
const decodeWords = (value: string) =>
  value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?utf-8\?([qb])\?([^?]*)\?=/gi, (_, kind: string, word: string) =>
      kind.toLowerCase() === 'q' ? decodeQuotedPrintable(word.replace(/_/g, ' ')) : decodeBase64(word),
    );

export type SmtpServer = Awaited<ReturnType<typeof startSmtpServer>>;
