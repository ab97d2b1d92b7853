import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../../workers/worker-runtime.js';
import { launchBrowser, openContext, screenshot } from '../support/browser.js';
import { linksOf, nonceOf, pathOf } from '../support/decision-links.js';
import { eventually } from '../support/eventually.js';
import { createMember } from '../support/members.js';
import { startSmtpServer, type SmtpServer } from '../support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let smtp: SmtpServer;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let browser: Browser;

beforeAll(async () => {
  smtp = await startSmtpServer();
  env = await createTestEnv({ SMTP_URL: smtp.url, OUTBOX_POLL_INTERVAL_MS: '100' });
  org = await env.createOrg();
  await createMember(env, org, 'reviewer', 'ada@acme.test');
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-mail']);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await env?.close();
  await smtp?.close();
});

async function mailedApproval() {
  const created = await org
    .request('post', '/v1/approvals')
    .send({
      action: 'refund-customer',
      agent: 'billing-bot',
      policyKey: 'refunds',
      payload: { customer: 'cus_8841', amount: 120.5, currency: 'EUR', reason: 'Duplicate charge <2 days ago>' },
      context: { ticket: 'SUP-4412' },
    })
    .expect(201);
  const mail = await eventually(() => smtp.received.find((received) => received.text.includes(created.body.id)));
  return { id: created.body.id as string, mail };
}

describe('in Chromium', () => {
  it('the approval mail’s HTML shows the request and its four links', async () => {
    const { mail } = await mailedApproval();
    const context = await openContext(browser, env, { width: 720, height: 900 });
    const page = await context.newPage();
    await page.setContent(mail.html!);
    await expect(page.getByRole('heading', { name: 'Approval needed: refund-customer' }).isVisible()).resolves.toBe(true);
    for (const name of ['Approve', 'Reject', 'Request changes', 'Open in console']) {
      await expect(page.getByRole('link', { name, exact: true }).isVisible()).resolves.toBe(true);
    }
    await expect(page.getByText('Duplicate charge <2 days ago>').isVisible()).resolves.toBe(true);
    await screenshot(page, 'approval-mail');
    await context.close();
  });

  it('the link’s confirmation page is styled under its CSP, and confirming approves', async () => {
    const { id, mail } = await mailedApproval();
    const context = await openContext(browser, env, { width: 720, height: 900 });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => message.text().includes('Content Security Policy') && violations.push(message.text()));
    await page.goto(pathOf(linksOf(mail.text).approve));
    await page.getByRole('heading', { name: 'Approve this request?' }).waitFor();
    // The server does not know the reader's zone: UTC, said so, not raw ISO 8601.
    await page.getByText(/^\d{1,2} \w{3} \d{4}, \d{2}:\d{2}:\d{2} UTC$/).waitFor();
    const button = page.getByRole('button', { name: 'Approve' });
    // The stylesheet applied: the button is green, so the style's CSP hash matched.
    // A string, evaluated in the page: this file is compiled without the DOM's types.
    await expect(page.evaluate("getComputedStyle(document.querySelector('button')).backgroundColor")).resolves.toBe('rgb(26, 127, 55)');
    await page.getByLabel('Feedback for the agent (optional)').fill('Duplicate confirmed in Stripe.');
    await screenshot(page, 'decision-link-confirm');
    await button.click();
    await page.getByRole('heading', { name: 'Request approved' }).waitFor();
    await screenshot(page, 'decision-link-done');
    expect(violations).toEqual([]);
    const approval = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(approval).toMatchObject({ status: 'approved', feedback: 'Duplicate confirmed in Stripe.' });
    await context.close();
  });

  it('the third link asks for the feedback before it requests changes, and works once', async () => {
    const { id, mail } = await mailedApproval();
    const link = pathOf(linksOf(mail.text).requestChanges);
    for (const [viewport, name] of [
      [{ width: 720, height: 900 }, 'decision-link-request-changes'],
      [{ width: 390, height: 844 }, 'decision-link-request-changes-390'],
    ] as const) {
      const context = await openContext(browser, env, viewport);
      const page = await context.newPage();
      await page.goto(link);
      await page.getByRole('heading', { name: 'Request changes to this request?' }).waitFor();
      // A string, evaluated in the page: this file is compiled without the DOM's types.
      await expect(page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).resolves.toBe(false);
      await screenshot(page, name);
      await context.close();
    }

    const context = await openContext(browser, env, { width: 720, height: 900 });
    const page = await context.newPage();
    await page.goto(link);
    const feedback = page.getByLabel('What should change? (required)');
    // Sent empty, the browser keeps the form: the feedback is required.
    await page.getByRole('button', { name: 'Request changes' }).click();
    await expect(page.evaluate("document.querySelector('#feedback').validity.valueMissing")).resolves.toBe(true);
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body.status).toBe('pending');

    await feedback.fill('Refund 100: the other 20.50 was a fee.');
    const nonce = nonceOf(await page.content());
    await page.getByRole('button', { name: 'Request changes' }).click();
    await page.getByRole('heading', { name: 'Changes requested' }).waitFor();
    await screenshot(page, 'decision-link-changes-requested');
    const approval = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(approval).toMatchObject({ status: 'changes_requested', feedback: 'Refund 100: the other 20.50 was a fee.' });

    // Opened again it shows where the request stands; the form replayed decides nothing.
    await page.goto(link);
    await page.getByRole('heading', { name: 'This request is waiting for the changes a reviewer asked for' }).waitFor();
    const replay = await page.request.post(link, { form: { nonce, feedback: 'again' } });
    expect(replay.status()).toBe(409);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: id } })).toBe(1);
    await context.close();
  });
});
