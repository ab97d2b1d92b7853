import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { endpointDisabledAlertConsumer } from '../src/consumers/endpoint-disabled-alert/endpoint-disabled-alert.js';
import { orphanAlertConsumer } from '../src/consumers/orphan-alert/orphan-alert.js';
import { createMailer } from '../src/lib/mailer.js';
import type { DomainEvent } from '../src/modules/outbox/domain-events.js';
import type { Services } from '../src/services.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { startSmtpServer, type SmtpServer } from './support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const ADMINS = ['ops@acme.test', 'security@acme.test'];

let smtp: SmtpServer;
let env: TestEnv;
let org: TestOrg;

beforeAll(async () => {
  smtp = await startSmtpServer();
  env = await createTestEnv({ SMTP_URL: smtp.url });
  org = await env.createOrg({ adminEmails: ADMINS });
});

/** The orphan admin mail of an approval, as its consumer handles the domain event (or an event made up for a missing one). */
async function processOrphan(orgId: string, approvalId: string, eventId: string, using: Services = env.services) {
  const [event] = await env.services.outbox.load([eventId]);
  const subject: DomainEvent = event ?? {
    id: eventId,
    type: 'approval.orphaned',
    orgId,
    seq: null,
    actor: null,
    createdAt: new Date(),
    data: { approvalId },
  };
  return orphanAlertConsumer.handle(using)(subject);
}

/** The endpoint-disabled admin mail, as its consumer handles the audit event of the service disabling it. */
function processEndpointDisabled(orgId: string, endpointId: string, reason: string) {
  return endpointDisabledAlertConsumer.handle(env.services)({
    id: randomUUID(),
    type: 'webhook.updated',
    orgId,
    seq: null,
    actor: { type: 'system', id: 'webhook-delivery' },
    createdAt: new Date(),
    data: { endpointId, enabled: false, reason },
  });
}

afterAll(async () => {
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
    await expect(processOrphan(org.orgId, approvalId, eventId)).resolves.toEqual({
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

  it('is delivered end to end by a BullMQ worker on the orphan-alert queue', async () => {
    const { approvalId, eventId } = await createOrphan(org, 'rotate-keys', 'key-rotation');
    const worker = await startWorkerRuntime(env.services, [orphanAlertConsumer.job.queue]);
    try {
      const [payload] = await orphanAlertConsumer.plan(await env.services.outbox.load([eventId]), env.services);
      await env.services.jobs.add(orphanAlertConsumer.job, payload!);
      await vi.waitFor(() => expect(mailsAbout(approvalId)).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(mailsAbout(approvalId)[0]!.text).toContain('key-rotation');
      const job = await env.services.jobs.queue(orphanAlertConsumer.job).getJob(orphanAlertConsumer.job.jobId!(payload!));
      await vi.waitFor(async () => expect(await job!.getState()).toBe('completed'), { timeout: 5_000, interval: 50 });
    } finally {
      await worker.stop();
    }
  });

  it('reaches the admins from a plain API call, through the outbox relay and the worker runtime', async () => {
    const worker = await startWorkerRuntime(env.services, ['outbox-relay', orphanAlertConsumer.job.queue]);
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
    await expect(processOrphan(lonely.orgId, approvalId, eventId)).resolves.toEqual({
      skipped: 'no admin emails',
    });
    expect(mailsAbout(approvalId)).toEqual([]);
    expect(env.logs).toContainEqual(
      expect.objectContaining({ level: 40, orgId: lonely.orgId, msg: expect.stringContaining('no admin emails') }),
    );
  });

  it('completes without mail when the approval no longer exists', async () => {
    const approvalId = randomUUID();
    await expect(processOrphan(org.orgId, approvalId, randomUUID())).resolves.toMatchObject({ skipped: expect.any(String) });
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
    await expect(processEndpointDisabled(org.orgId, endpoint.id, reason)).resolves.toEqual({
      sent: 2,
    });

    const [mail] = mailsAbout(endpoint.id);
    expect(mail!.to.sort()).toEqual([...ADMINS].sort());
    expect(mail!.subject).toContain('https://hooks.acme.test/approvals');
    expect(mail!.text).toContain(endpoint.id);
    expect(mail!.text).toContain('https://hooks.acme.test/approvals');
    expect(mail!.text).toContain(reason);
  });

  it('completes without mail when the endpoint was deleted', async () => {
    const endpointId = randomUUID();
    await expect(processEndpointDisabled(org.orgId, endpointId, '410 Gone')).resolves.toMatchObject({ skipped: expect.any(String) });
    expect(mailsAbout(endpointId)).toEqual([]);
  });
});

describe('mailer', () => {
  it('in production without SMTP_URL, logs the recipients and subject, and the text (its links are credentials) only at debug level', async () => {
    const logger = env.services.logger.child({ test: 'unsent-mail' }, { level: 'debug' });
    const mailer = createMailer({ MAIL_FROM: env.config.MAIL_FROM, NODE_ENV: 'production' }, logger);
    const { approvalId, eventId } = await createOrphan(org, 'drop-table', 'schema-changes');
    await processOrphan(org.orgId, approvalId, eventId, { ...env.services, mailer });

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
    const mailer = createMailer({ SMTP_URL: refusing.url, MAIL_FROM: env.config.MAIL_FROM, NODE_ENV: 'test' }, env.services.logger);
    try {
      const { approvalId, eventId } = await createOrphan(org, 'wire-money', 'payments');
      await expect(processOrphan(org.orgId, approvalId, eventId, { ...env.services, mailer })).rejects.toThrow(/550|rejected/i);
      expect(refusing.received).toEqual([]);
    } finally {
      mailer.close();
      await refusing.close();
    }
  });
});
