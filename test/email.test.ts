import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMailer, type Mailer } from '../src/lib/mailer.js';
import { emailJob } from '../src/queues/job-definitions.js';
import { createEmailProcessor } from '../workers/email-processor.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

interface ReceivedMail {
  /** The envelope recipients, as the server saw them in RCPT TO. */
  to: string[];
  from: string;
  subject: string;
  text: string;
}

/** A real SMTP server on an ephemeral port that keeps what it receives, or refuses every recipient. */
async function startSmtpServer({ refuseRecipients = false } = {}) {
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

const ADMINS = ['ops@acme.test', 'security@acme.test'];

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let env: TestEnv;
let org: TestOrg;
let mailer: Mailer;
let processEmail: ReturnType<typeof createEmailProcessor>;

beforeAll(async () => {
  smtp = await startSmtpServer();
  env = await createTestEnv({ SMTP_URL: smtp.url });
  org = await env.createOrg({ adminEmails: ADMINS });
  mailer = createMailer(env.config, env.services.logger);
  processEmail = createEmailProcessor({ db: env.services.db, mailer, logger: env.services.logger });
});
afterAll(async () => {
  mailer.close();
  await env.close();
  await smtp.close();
});

/** An approval whose policy key matches no policy, created over the API, and its orphan event id. */
async function createOrphan(as: TestOrg, action: string, policyKey: string) {
  const res = await as
    .request('post', '/v1/approvals')
    .send({ action, payload: { service: 'billing' }, policyKey })
    .expect(201);
  const messages = await env.services.db.outboxMessage.findMany({ where: { orgId: as.orgId, eventType: 'approval.orphaned' } });
  const event = messages.find((message) => (message.body as { data: { approvalId: string } }).data.approvalId === res.body.id);
  return { approvalId: res.body.id as string, eventId: event!.eventId };
}

const mailsAbout = (id: string) => smtp.received.filter((mail) => mail.text.includes(id));

describe('approval-orphaned', () => {
  it('mails every admin with the action, the missing policy key, the approval id and what to do', async () => {
    const { approvalId, eventId } = await createOrphan(org, 'deploy-production', 'prod-deploys');
    await expect(processEmail({ data: { kind: 'approval-orphaned', orgId: org.orgId, approvalId, eventId } })).resolves.toEqual({
      sent: 2,
    });

    const [mail, ...others] = mailsAbout(approvalId);
    expect(others).toEqual([]);
    expect(mail!.to.sort()).toEqual([...ADMINS].sort());
    expect(mail!.from).toBe(env.config.MAIL_FROM);
    expect(mail!.subject).toBe('[Approval Gate] "deploy-production" is waiting: no policy "prod-deploys"');
    expect(mail!.text).toContain('deploy-production');
    expect(mail!.text).toContain('Missing policy key: prod-deploys');
    expect(mail!.text).toContain(`Approval id:        ${approvalId}`);
    expect(mail!.text).toContain('PUT /v1/policies/prod-deploys');
    expect(mail!.text).toContain(`POST /v1/approvals/${approvalId}/decision`);
  });

  it('is delivered end to end by a BullMQ worker on the email queue', async () => {
    const { approvalId, eventId } = await createOrphan(org, 'rotate-keys', 'key-rotation');
    const connection = new Redis(env.config.REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(emailJob.queue, processEmail, { connection, prefix: env.config.REDIS_PREFIX });
    try {
      const payload = { kind: 'approval-orphaned', orgId: org.orgId, approvalId, eventId } as const;
      await env.services.jobs.sendEmail(payload);
      await vi.waitFor(() => expect(mailsAbout(approvalId)).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(mailsAbout(approvalId)[0]!.text).toContain('key-rotation');
      const job = await env.services.jobs.email.getJob(emailJob.jobId(payload));
      await vi.waitFor(async () => expect(await job!.getState()).toBe('completed'), { timeout: 5_000, interval: 50 });
    } finally {
      await worker.close();
      await connection.quit();
    }
  });

  it('reaches the admins from a plain API call, through the outbox relay and the worker runtime', async () => {
    const worker = await startWorkerRuntime(env.services, ['outbox-relay', 'email']);
    try {
      const res = await org.request('post', '/v1/approvals').send({ action: 'drop-table', payload: {}, policyKey: 'db-admin' }).expect(201);
      await vi.waitFor(() => expect(mailsAbout(res.body.id)).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(mailsAbout(res.body.id)[0]!.text).toContain('Missing policy key: db-admin');
    } finally {
      await worker.stop();
    }
  });

  it('completes without mail when the organization has no admin emails', async () => {
    const lonely = await env.createOrg({ adminEmails: [] });
    const { approvalId, eventId } = await createOrphan(lonely, 'deploy', 'nobody-home');
    await expect(processEmail({ data: { kind: 'approval-orphaned', orgId: lonely.orgId, approvalId, eventId } })).resolves.toEqual({
      skipped: 'no admin emails',
    });
    expect(mailsAbout(approvalId)).toEqual([]);
    expect(env.logs).toContainEqual(
      expect.objectContaining({ level: 40, orgId: lonely.orgId, msg: expect.stringContaining('no admin emails') }),
    );
  });

  it('completes without mail when the approval no longer exists', async () => {
    const approvalId = randomUUID();
    await expect(
      processEmail({ data: { kind: 'approval-orphaned', orgId: org.orgId, approvalId, eventId: randomUUID() } }),
    ).resolves.toMatchObject({ skipped: expect.any(String) });
    expect(mailsAbout(approvalId)).toEqual([]);
  });
});

describe('endpoint-disabled', () => {
  it('mails the admins the endpoint id, its url and the reason', async () => {
    const endpoint = await env.services.db.webhookEndpoint.create({
      data: {
        orgId: org.orgId,
        url: 'https://hooks.acme.test/approvals',
        events: ['approval.approved'],
        secret: 'whsec_test',
        enabled: false,
      },
    });
    const reason = 'every delivery failed for 5 days';
    await expect(processEmail({ data: { kind: 'endpoint-disabled', orgId: org.orgId, endpointId: endpoint.id, reason } })).resolves.toEqual(
      {
        sent: 2,
      },
    );

    const [mail] = mailsAbout(endpoint.id);
    expect(mail!.to.sort()).toEqual([...ADMINS].sort());
    expect(mail!.subject).toContain('https://hooks.acme.test/approvals');
    expect(mail!.text).toContain(endpoint.id);
    expect(mail!.text).toContain('https://hooks.acme.test/approvals');
    expect(mail!.text).toContain(reason);
  });

  it('completes without mail when the endpoint was deleted', async () => {
    const endpointId = randomUUID();
    await expect(
      processEmail({ data: { kind: 'endpoint-disabled', orgId: org.orgId, endpointId, reason: '410 Gone' } }),
    ).resolves.toMatchObject({ skipped: expect.any(String) });
    expect(mailsAbout(endpointId)).toEqual([]);
  });
});

describe('mailer', () => {
  it('logs the recipients and subject when SMTP_URL is not set, and the text only at debug level', async () => {
    const logger = env.services.logger.child({ test: 'unsent-mail' }, { level: 'debug' });
    const mailer = createMailer({ MAIL_FROM: env.config.MAIL_FROM }, logger);
    const processLogged = createEmailProcessor({ db: env.services.db, mailer, logger });
    const { approvalId, eventId } = await createOrphan(org, 'drop-table', 'schema-changes');
    await processLogged({ data: { kind: 'approval-orphaned', orgId: org.orgId, approvalId, eventId } });

    expect(mailsAbout(approvalId)).toEqual([]);
    const logged = env.logs.filter((line) => line.test === 'unsent-mail' && line.mail);
    expect(logged).toEqual([
      expect.objectContaining({ level: 30, mail: { to: ADMINS, subject: expect.stringContaining('drop-table') } }),
      expect.objectContaining({
        level: 20,
        mail: { to: ADMINS, subject: expect.stringContaining('drop-table'), text: expect.any(String) },
      }),
    ]);
    expect((logged[1]!.mail as { text: string }).text).toContain('schema-changes');
    expect((logged[1]!.mail as { text: string }).text).toContain(approvalId);
  });

  it('rejects when the SMTP server refuses, so the job is retried', async () => {
    const refusing = await startSmtpServer({ refuseRecipients: true });
    const mailer = createMailer({ SMTP_URL: refusing.url, MAIL_FROM: env.config.MAIL_FROM }, env.services.logger);
    try {
      const processRefused = createEmailProcessor({ db: env.services.db, mailer, logger: env.services.logger });
      const { approvalId, eventId } = await createOrphan(org, 'wire-money', 'payments');
      await expect(processRefused({ data: { kind: 'approval-orphaned', orgId: org.orgId, approvalId, eventId } })).rejects.toThrow(
        /550|rejected/i,
      );
      expect(refusing.received).toEqual([]);
    } finally {
      mailer.close();
      await refusing.close();
    }
  });
});
