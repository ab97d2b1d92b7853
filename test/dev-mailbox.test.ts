import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointDisabledAlertConsumer } from '../src/consumers/endpoint-disabled-alert/endpoint-disabled-alert.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { launchBrowser, openContext, screenshot } from './support/browser.js';
import { linksOf } from './support/decision-links.js';
import { eventually } from './support/eventually.js';
import { createMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const ADMIN = 'ops@acme.test';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let browser: Browser;

beforeAll(async () => {
  // As `npm run dev` runs: development, and no SMTP_URL.
  env = await createTestEnv({ NODE_ENV: 'development', OUTBOX_POLL_INTERVAL_MS: '100' });
  org = await env.createOrg({ adminEmails: [ADMIN] });
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-mail', 'member-invite-mail', 'orphan-alert']);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await env?.close();
});

const kept = async (about: string) => (await env.services.mailbox!.list()).filter((mail) => mail.text.includes(about));
const loggedMails = () => env.logs.filter((line) => line.mail);

describe('mail without SMTP_URL in development', () => {
  it('writes every mail to the log with its text, and keeps it in the mailbox: invites, approval mail with its links, orphan and endpoint alerts', async () => {
    const invited = await org.request('post', '/v1/members').send({ email: 'rita@acme.test', role: 'reviewer' }).expect(201);
    // The answer does not pretend a mail left.
    expect(invited.body.inviteMail).toBe('not_sent');
    const [invite] = await eventually(async () => ((await kept('/console/invite/')).length > 0 ? kept('/console/invite/') : null));
    expect(invite!.to).toEqual(['rita@acme.test']);

    await createMember(env, org, 'reviewer', 'rex@acme.test');
    const pending = await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 250 }, policyKey: 'no-such-policy', agent: 'support-bot' })
      .expect(201);
    const toRex = await eventually(async () =>
      (await kept(`/console/approvals/${pending.body.id}`)).find(
        (mail) => mail.subject.startsWith('Approval needed') && mail.to.includes('rex@acme.test'),
      ),
    );
    expect(linksOf(toRex.text).approve).toMatch(new RegExp(`^${env.config.PUBLIC_URL}/d/[A-Za-z0-9_-]{43}$`));
    const orphan = await eventually(async () => (await kept(pending.body.id)).find((mail) => mail.to.includes(ADMIN)));
    expect(orphan.subject).toContain('no-such-policy');

    const endpointId = randomUUID();
    await env.services.db.webhookEndpoint.create({
      data: {
        id: endpointId,
        orgId: org.orgId,
        url: 'https://hooks.acme.test/x',
        events: ['approval.approved'],
        secret: 'whsec_x',
        enabled: false,
      },
    });
    await endpointDisabledAlertConsumer.handle(env.services)({
      id: randomUUID(),
      type: 'webhook.updated',
      orgId: org.orgId,
      seq: null,
      actor: { type: 'system', id: 'webhook-delivery' },
      createdAt: new Date(),
      data: { endpointId, enabled: false, reason: '410 Gone' },
    });
    expect(await kept(endpointId)).toHaveLength(1);

    // The log holds each whole mail at info, links included.
    for (const mail of [invite!, toRex, orphan]) {
      expect(loggedMails()).toContainEqual(
        expect.objectContaining({ level: 30, mail: { to: mail.to, subject: mail.subject }, msg: expect.stringContaining(mail.text) }),
      );
    }
  });

  it('serves the mailbox page from every web process, with the links clickable, and a decision link works from it', async () => {
    const pending = await org
      .request('post', '/v1/approvals')
      .send({ action: 'wire-money', payload: { amount: 9000, currency: 'EUR' }, policyKey: 'no-such-policy', agent: 'treasury-bot' })
      .expect(201);
    await eventually(async () => (await kept(`/console/approvals/${pending.body.id}`)).length > 0);

    // Another web process reads the same mailbox: it lives in Redis.
    const peer = await env.createPeer();
    const listed = await peer.http.get('/dev/mailbox').expect(200);
    expect(listed.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(listed.text).toContain('Approval needed: wire-money');

    const context = await openContext(browser, env, { width: 900, height: 1100 });
    const page = await context.newPage();
    await page.goto('/dev/mailbox');
    await page.getByRole('heading', { name: 'Mailbox' }).waitFor();
    const mail = page.locator('article', { hasText: 'Approval needed: wire-money' }).filter({ hasText: 'rex@acme.test' });
    await screenshot(page, 'dev-mailbox', { fullPage: false });
    await mail.getByRole('link', { name: /\/d\// }).first().click();
    await page.getByRole('heading', { name: 'Approve this request?' }).waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Request approved' }).waitFor();
    await context.close();
    await org.request('get', `/v1/approvals/${pending.body.id}`).expect(200, /"status":"approved"/);
  });
});

describe('the mailbox outside development', () => {
  it('is not mounted in production, and production keeps no mail', async () => {
    const production = await createTestEnv({ NODE_ENV: 'production' });
    try {
      expect(production.services.mailbox).toBeNull();
      const res = await production.http.get('/dev/mailbox').expect(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    } finally {
      await production.close();
    }
  });

  it('is not mounted when mail leaves through SMTP_URL', async () => {
    const withSmtp = await createTestEnv({ NODE_ENV: 'development', SMTP_URL: 'smtp://127.0.0.1:9' });
    try {
      await withSmtp.http.get('/dev/mailbox').expect(404);
    } finally {
      await withSmtp.close();
    }
  });
});
