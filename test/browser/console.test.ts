import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  launchBrowser,
  openContext,
  overflowsHorizontally,
  screenshot,
  seriousAccessibilityViolations,
  signIn,
  unnamedControls,
} from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { startWorkerRuntime, type WorkerRuntime } from '../../workers/worker-runtime.js';

let env: TestEnv;
let browser: Browser;
let worker: WorkerRuntime;

beforeAll(async () => {
  [env, browser] = await Promise.all([
    createTestEnv({ CONSOLE_DIR: inject('consoleDir'), OUTBOX_POLL_INTERVAL_MS: '100', WEBHOOK_BACKOFF_SCALE: '0.001' }),
    launchBrowser(),
  ]);
  // The relay feeds the live inbox; the queues expire requests, deliver webhooks and write exports.
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-expiry', 'webhook-delivery', 'audit-export']);
});
afterAll(async () => {
  await worker?.stop();
  await browser?.close();
  await env?.close();
});

const POLICY = {
  rules: [
    { when: 'payload.amount <= 10', outcome: 'allow' },
    { when: 'payload.amount > 100', outcome: 'review' },
  ],
};

/** An organization of its own per test, with a policy and one member of each role. */
async function organization(): Promise<{ org: TestOrg; admin: TestMember; reviewer: TestMember; viewer: TestMember }> {
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send(POLICY).expect(200);
  const [admin, reviewer, viewer] = await Promise.all([
    createMember(env, org, 'admin'),
    createMember(env, org, 'reviewer'),
    createMember(env, org, 'viewer'),
  ]);
  return { org, admin, reviewer, viewer };
}

async function createApproval(org: TestOrg, action: string, payload: Record<string, unknown> = { amount: 500 }) {
  const created = await org
    .request('post', '/v1/approvals')
    .send({ action, payload, policyKey: 'refunds', agent: 'billing-bot', context: { reason: 'customer asked twice' } })
    .expect(201);
  return created.body as { id: string; payloadHash: string };
}

async function approvalOf(org: TestOrg, id: string) {
  return (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
}

/** The inbox's rows, in order, by the action each one links to. */
async function inboxActions(page: Page): Promise<string[]> {
  return page.getByRole('list', { name: 'Pending approvals' }).locator('.row-title').getByRole('link').allTextContents();
}

describe('signing in and out', () => {
  it('refuses a wrong password, signs in, and signs out on the server', async () => {
    const { reviewer } = await organization();
    const context = await openContext(browser, env);
    const page = await context.newPage();
    await page.goto('/console/');
    await page.getByRole('heading', { name: 'Sign in to Approval Gate' }).waitFor();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, 'sign-in');
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    expect(await overflowsHorizontally(page)).toBe(false);
    await screenshot(page, 'sign-in-phone');
    await page.setViewportSize({ width: 1200, height: 900 });

    await page.getByLabel('Email').fill(reviewer.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The email or the password is wrong.' }).waitFor();

    await page.getByLabel('Password').fill(reviewer.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    const [cookie] = (await context.cookies()).filter((candidate) => candidate.name === 'ag_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    await env.http.get('/v1/session').set('cookie', `ag_session=${cookie!.value}`).expect(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    await env.http.get('/v1/session').set('cookie', `ag_session=${cookie!.value}`).expect(401);
    // A page behind sign-in now sends the visitor to sign in, and back to it afterwards.
    await page.goto('/console/history');
    await page.getByLabel('Email').fill(reviewer.email);
    await page.getByLabel('Password').fill(reviewer.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'History' }).waitFor();
    await context.close();
  });
});

describe('invites', () => {
  it('an admin invites a reviewer, who sets a password on the invite page and is signed in; the link then stops working', async () => {
    const { org, admin } = await organization();
    const [{ name: orgName }] = (await env.services.sql.query<{ name: string }>(null, 'SELECT name FROM organizations WHERE id = $1', [
      org.orgId,
    ])) as [{ name: string }];
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'Members' }).click();
    const form = page.getByRole('form', { name: 'Invite a member' });
    await form.getByLabel('Email').fill('new.reviewer@acme.test');
    await form.getByLabel('Role').selectOption('reviewer');
    await form.getByRole('button', { name: 'Send invite' }).click();
    const inviteUrl = await page.getByRole('textbox', { name: 'Invite link of new.reviewer@acme.test' }).inputValue();
    expect(inviteUrl).toMatch(/\/console\/invite\/[\w-]+$/);
    // This service has no SMTP_URL: the page does not claim a mail was sent.
    await page.getByText('No mail was sent: this service has no mail server (SMTP_URL)', { exact: false }).waitFor();
    await context.close();

    const invitee = await openContext(browser, env);
    const invitePage = await invitee.newPage();
    await invitePage.goto(new URL(inviteUrl).pathname);
    // The page names what the invite joins before anything is typed.
    await invitePage.getByRole('heading', { name: `Join ${orgName}` }).waitFor();
    await invitePage
      .getByText(`You are invited to ${orgName} on Approval Gate as reviewer, with the email new.reviewer@acme.test.`)
      .waitFor();
    expect(await seriousAccessibilityViolations(invitePage)).toEqual([]);
    await screenshot(invitePage, 'invite');
    await invitePage.setViewportSize({ width: 390, height: 844 });
    expect(await seriousAccessibilityViolations(invitePage)).toEqual([]);
    expect(await overflowsHorizontally(invitePage)).toBe(false);
    await screenshot(invitePage, 'invite-phone');
    await invitePage.getByLabel('Your name (optional)').fill('Nora Reviewer');
    await invitePage.getByLabel('New password').fill('short');
    await invitePage.getByLabel('Repeat the password').fill('short');
    await invitePage.getByRole('button', { name: 'Set password and sign in' }).click();
    // The server's rule, shown on the field it names; the invite stays usable.
    await invitePage.getByText('password must be at least 10 characters').waitFor();
    expect(await invitePage.getByLabel('New password').getAttribute('aria-invalid')).toBe('true');

    await invitePage.getByLabel('New password').fill('a-long-enough-password');
    await invitePage.getByLabel('Repeat the password').fill('a-long-enough-password');
    await invitePage.getByRole('button', { name: 'Set password and sign in' }).click();
    await invitePage.getByRole('heading', { name: 'Inbox' }).waitFor();
    await invitePage.getByText('new.reviewer@acme.test').waitFor();
    await invitee.close();

    const late = await openContext(browser, env);
    const latePage = await late.newPage();
    await latePage.goto(new URL(inviteUrl).pathname);
    // A used invite says so on opening, and again if tried.
    await latePage.getByText('This invite is used or expired.').waitFor();
    await latePage.getByLabel('New password').fill('another-long-password');
    await latePage.getByLabel('Repeat the password').fill('another-long-password');
    await latePage.getByRole('button', { name: 'Set password and sign in' }).click();
    await latePage.getByText('This invite is used or expired.').waitFor();
    await late.close();
  });
});

describe('the live inbox', () => {
  it('shows requests arriving and drops those settled by another web process or by expiry, each within 2 s', async () => {
    const { org, reviewer } = await organization();
    await org.request('put', '/v1/policies/quick').send({ timeoutSeconds: 3 }).expect(200);
    const peer = await env.createPeer();
    const asCreator = (method: 'post', path: string) => peer.http[method](path).set('authorization', `Bearer ${org.key}`);
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    const row = (action: string) => page.getByRole('list', { name: 'Pending approvals' }).getByRole('link', { name: action, exact: true });

    const arriving = (
      await asCreator('post', '/v1/approvals')
        .send({ action: 'live-arrives', payload: { amount: 500 }, policyKey: 'refunds' })
        .expect(201)
    ).body as { id: string };
    await row('live-arrives').waitFor({ timeout: 2000 });

    // Another process settles it, with another key.
    await peer.http
      .post(`/v1/approvals/${arriving.id}/decision`)
      .set('authorization', `Bearer ${org.reviewerKey}`)
      .send({ verdict: 'rejected' })
      .expect(200);
    await row('live-arrives').waitFor({ state: 'detached', timeout: 2000 });

    const expiring = (
      await asCreator('post', '/v1/approvals').send({ action: 'live-expires', payload: {}, policyKey: 'quick' }).expect(201)
    ).body as { expiresAt: string };
    await row('live-expires').waitFor({ timeout: 2000 });
    // The worker expires it 3 s after creation; the row goes within 2 s of that deadline.
    await row('live-expires').waitFor({ state: 'detached', timeout: new Date(expiring.expiresAt).getTime() + 2000 - Date.now() });
    await context.close();
  });

  it("shows the first page as it arrives, while the read the stream's opening asks for is still on its way", async () => {
    const { org, reviewer } = await organization();
    await createApproval(org, 'first-page-early');
    const { context, page } = await signIn(browser, env, reviewer);
    // The signed-in inbox's own reads (its stream's opening asks again) may still be on their way,
    // and would be taken below for the fresh load's: nothing of that document is left to send one.
    await page.goto('about:blank');
    // The inbox's reads, on a fresh load of the console: the first page (sent as the bundle starts)
    // is held until the stream has opened and asked again, and every later read is held throughout,
    // the approval's own event included (on a loaded machine it may reach the opened stream and ask
    // a third time); only the first page can show the row.
    let reads = 0;
    let streamReadSent!: () => void;
    const streamRead = new Promise<void>((resolve) => (streamReadSent = resolve));
    let releaseStreamRead!: () => void;
    const streamReadReleased = new Promise<void>((resolve) => (releaseStreamRead = resolve));
    await page.route(
      (url) => url.pathname === '/v1/approvals' && url.searchParams.get('status') === 'pending',
      async (route) => {
        const read = ++reads;
        if (read === 1) await streamRead;
        else {
          if (read === 2) streamReadSent();
          await streamReadReleased;
        }
        await route.continue().catch(() => undefined);
      },
    );
    await page.goto('/console/');
    await page.getByRole('list', { name: 'Pending approvals' }).getByRole('link', { name: 'first-page-early', exact: true }).waitFor();
    expect(reads).toBeGreaterThanOrEqual(2);
    releaseStreamRead();
    await context.close();
  });
});

describe('deciding', () => {
  it("shows an approval's request, policy rule, hash, time left and audit events, and approves it as the member", async () => {
    const { org, reviewer } = await organization();
    const approval = await createApproval(org, 'refund-approve');
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('link', { name: 'refund-approve', exact: true }).click();
    await page.getByRole('heading', { name: 'refund-approve' }).waitFor();

    await page.getByText('Rule 1 (payload.amount > 100) matched: review.').waitFor();
    await page.getByText('billing-bot', { exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'refunds' }).count()).toBe(1);
    expect(await page.getByLabel('Payload', { exact: true }).textContent()).toBe(JSON.stringify({ amount: 500 }, null, 2));
    expect(await page.getByLabel('Context', { exact: true }).textContent()).toContain('"reason": "customer asked twice"');
    await page.getByText(approval.payloadHash, { exact: true }).waitFor();
    await page.getByText(/\d+ min( \d+ s)? left/).waitFor();
    await page.getByRole('region', { name: 'Audit events of this approval' }).getByText('approval.created').waitFor();
    await page.getByText('none yet; 1 approving vote settles it', { exact: true }).waitFor();
    await screenshot(page, 'approval');

    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('.page-head .badge', { hasText: 'approved' }).waitFor();
    // Settled: the quorum no longer decides anything, and is not shown.
    await page
      .getByRole('listitem')
      .filter({ hasText: `${reviewer.email}: approved at` })
      .waitFor();
    expect(await page.getByText(/settles? it/).count()).toBe(0);
    const decided = await approvalOf(org, approval.id);
    expect(decided).toMatchObject({ status: 'approved', decidedBy: { type: 'user', id: reviewer.id, email: reviewer.email } });
    await page.getByRole('region', { name: 'Audit events of this approval' }).getByText('approval.approved').waitFor();
    // The actor is named by email, as everywhere else, on this page and on the audit page.
    const approvedRow = page.getByRole('row').filter({ hasText: 'approval.approved' });
    await approvedRow.getByRole('cell', { name: reviewer.email, exact: true }).waitFor();
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'approval.approved' }).getByRole('cell', { name: reviewer.email, exact: true }).waitFor();
    expect(await page.getByRole('cell', { name: /^member [0-9a-f]{8}$/ }).count()).toBe(0);
    await context.close();
  });

  it("shows the stage under review and each vote's stage, and the next stage's reviewers decide it", async () => {
    const { org, admin, reviewer } = await organization();
    await org
      .request('put', '/v1/policies/in-turn')
      .send({
        stages: [
          { name: 'Team lead', reviewers: { roles: ['reviewer'] } },
          { name: 'Finance', reviewers: { roles: ['admin'] } },
        ],
      })
      .expect(200);
    const approval = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: 'refund-stages', payload: { amount: 500 }, policyKey: 'in-turn' })
        .expect(201)
    ).body as { id: string };

    const lead = await signIn(browser, env, reviewer);
    await lead.page.goto(`/console/approvals/${approval.id}`);
    await lead.page.getByRole('heading', { name: 'Decide · stage 1 (Team lead)' }).waitFor();
    await lead.page.getByText('1 (Team lead): its reviewers decide now', { exact: true }).waitFor();
    await lead.page.getByText('none yet; 1 approving vote in stage 1 completes it', { exact: true }).waitFor();
    await lead.page.getByRole('button', { name: 'Approve', exact: true }).click();
    await lead.page.getByText('2 (Finance): its reviewers decide now', { exact: true }).waitFor();
    await lead.page
      .getByRole('listitem')
      .filter({ hasText: `Stage 1: ${reviewer.email}: approved at` })
      .waitFor();
    await lead.context.close();

    const finance = await signIn(browser, env, admin);
    await finance.page.goto(`/console/approvals/${approval.id}`);
    await finance.page.getByRole('heading', { name: 'Decide · stage 2 (Finance)' }).waitFor();
    await screenshot(finance.page, 'approval-stages');
    await finance.page.getByRole('button', { name: 'Approve', exact: true }).click();
    await finance.page.locator('.page-head .badge', { hasText: 'approved' }).waitFor();
    expect(await approvalOf(org, approval.id)).toMatchObject({ status: 'approved', stage: { index: 2, name: 'Finance' } });
    await finance.context.close();
  });

  it('rejects with feedback', async () => {
    const { org, reviewer } = await organization();
    const approval = await createApproval(org, 'refund-reject');
    const { context, page } = await signIn(browser, env, reviewer);
    await page.goto(`/console/approvals/${approval.id}`);
    await page.getByRole('button', { name: 'Reject…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reject refund-reject' });
    await dialog.getByLabel('Feedback for the agent').fill('Refunds above 100 need a receipt.');
    await dialog.getByRole('button', { name: 'Reject' }).click();
    // The feedback is in the dialog's field before anything is sent: the badge says it was decided.
    await page.locator('.page-head .badge', { hasText: 'rejected' }).waitFor();
    await page.getByText('Refunds above 100 need a receipt.', { exact: true }).waitFor();
    expect(await approvalOf(org, approval.id)).toMatchObject({ status: 'rejected', feedback: 'Refunds above 100 need a receipt.' });
    await context.close();
  });

  it('approves an edited payload: invalid JSON is refused, and the diff is shown before sending', async () => {
    const { org, reviewer } = await organization();
    const approval = await createApproval(org, 'refund-edit', { amount: 500, currency: 'EUR' });
    const { context, page } = await signIn(browser, env, reviewer);
    await page.goto(`/console/approvals/${approval.id}`);
    await page.getByRole('button', { name: 'Edit payload and approve…' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    const review = page.getByRole('button', { name: 'Review changes' });

    await editor.fill('{ "amount": ');
    await page.getByText(/^Not valid JSON/).waitFor();
    expect(await review.isDisabled()).toBe(true);
    await editor.fill('[250]');
    await page.getByText('The payload must be a JSON object.').waitFor();
    expect(await review.isDisabled()).toBe(true);

    await editor.fill(JSON.stringify({ amount: 250, currency: 'EUR' }, null, 2));
    await review.click();
    const diff = page.getByLabel('Your change to the payload, line by line');
    expect(await diff.locator('del').allTextContents()).toEqual(['-   "amount": 500,']);
    expect(await diff.locator('ins').allTextContents()).toEqual(['+   "amount": 250,']);
    expect(await approvalOf(org, approval.id)).toMatchObject({ status: 'pending' });

    await page.getByRole('button', { name: 'Approve with this payload' }).click();
    await page.locator('.page-head .badge', { hasText: 'approved' }).waitFor();
    const decided = await approvalOf(org, approval.id);
    expect(decided).toMatchObject({ status: 'approved', payload: { amount: 250, currency: 'EUR' } });
    expect(decided.payloadHash).not.toBe(approval.payloadHash);
    await page.getByText(decided.payloadHash, { exact: true }).waitFor();
    await context.close();
  });

  it('triages the inbox from the keyboard: j/k move, a approves, r rejects with feedback, c requests changes, / searches, enter opens', async () => {
    const { org, reviewer } = await organization();
    const changes = await createApproval(org, 'triage-0');
    const first = await createApproval(org, 'triage-1');
    const second = await createApproval(org, 'triage-2');
    const third = await createApproval(org, 'triage-3');
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('link', { name: 'triage-1', exact: true }).waitFor();
    expect(await inboxActions(page)).toEqual(['triage-3', 'triage-2', 'triage-1', 'triage-0']);
    const selected = () => page.locator('li[aria-current="true"]').getByRole('link').first().textContent();
    expect(await selected()).toBe('triage-3');
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await screenshot(page, 'inbox');

    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await selected()).toBe('triage-1');
    await page.keyboard.press('k');
    expect(await selected()).toBe('triage-2');

    await page.keyboard.press('a');
    await page.getByRole('status').filter({ hasText: 'Approved triage-2' }).waitFor();
    expect(await approvalOf(org, second.id)).toMatchObject({ status: 'approved' });
    expect(await inboxActions(page)).toEqual(['triage-3', 'triage-1', 'triage-0']);
    expect(await selected()).toBe('triage-1');

    await page.keyboard.press('r');
    const dialog = page.getByRole('dialog', { name: 'Reject triage-1' });
    await dialog.getByLabel('Feedback for the agent').fill('Duplicate of triage-3.');
    await dialog.getByRole('button', { name: 'Reject' }).click();
    await page.getByRole('status').filter({ hasText: 'Rejected triage-1' }).waitFor();
    expect(await approvalOf(org, first.id)).toMatchObject({ status: 'rejected', feedback: 'Duplicate of triage-3.' });

    // `/` moves to the search box, where keys type text instead of acting on rows.
    await page.keyboard.press('/');
    await page.locator('input[type="search"]:focus').waitFor();
    await page.keyboard.type('triage-0');
    expect(await inboxActions(page)).toEqual(['triage-0']);
    expect(await approvalOf(org, changes.id)).toMatchObject({ status: 'pending' });

    // `c` opens the request's page with the request-changes form, its feedback field focused.
    await page.locator('li[aria-current="true"]').getByRole('link', { name: 'triage-0', exact: true }).focus();
    await page.keyboard.press('c');
    await page.waitForURL(`**/console/approvals/${changes.id}`);
    await page.getByRole('form', { name: 'Request changes' }).waitFor();
    await page.keyboard.type('Name the order.');
    await page.getByRole('button', { name: 'Review request' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Send request for changes' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('.page-head .badge', { hasText: 'changes requested' }).waitFor();
    expect(await approvalOf(org, changes.id)).toMatchObject({ status: 'changes_requested', feedback: 'Name the order.' });

    await page.goBack();
    await page.getByRole('link', { name: 'triage-3', exact: true }).waitFor();
    expect(await inboxActions(page)).toEqual(['triage-3']);
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/console/approvals/${third.id}`);
    await page.getByRole('heading', { name: 'triage-3' }).waitFor();
    await context.close();
  });
});

describe('inbox rows', () => {
  it('show the payload summary, amount, agent and policy, a count, search and a scope filter; one-click approve only on a payload shown whole', async () => {
    const { org, reviewer } = await organization();
    const refund = await createApproval(org, 'refund', { amount: 4200, currency: 'EUR', customer: 'cus_42', reason: 'double charge' });
    const long = await createApproval(org, 'bulk-export', { amount: 500, note: 'x'.repeat(200), rows: 12 });
    const { context, page } = await signIn(browser, env, reviewer);
    const list = page.getByRole('list', { name: 'Pending approvals' });
    const refundRow = list.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'refund', exact: true }) });
    await refundRow.waitFor();
    expect(await refundRow.textContent()).toContain('€4,200.00');
    // Every field, in the order the API returns them (PostgreSQL's jsonb order).
    const summary = await refundRow.locator('.summary').textContent();
    for (const part of ['amount: 4200', 'currency: "EUR"', 'customer: "cus_42"', 'reason: "double charge"'])
      expect(summary).toContain(part);
    // The key that created it, by its name, or its id's start for a key made without one (as these are).
    expect(await refundRow.textContent()).toContain(`agent billing-bot · key ${org.keyId.slice(0, 8)}… · policy refunds`);
    // Times are in the reader's zone, and name it.
    expect(await refundRow.locator('.meta').textContent()).toMatch(/\d{1,2}:\d{2}:\d{2}\s?[AP]M (UTC|GMT[+-][\d:]+|[A-Z]{3,5})$/);
    await page.getByText('2 pending', { exact: true }).waitFor();

    // The long payload is cut on the row: it offers Review (the whole payload) instead of Approve, and `a` does nothing.
    const longRow = list.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'bulk-export', exact: true }) });
    expect(await longRow.getByRole('button', { name: /^Approve/ }).count()).toBe(0);
    await longRow.getByRole('link', { name: /^Review the whole payload of bulk-export/ }).waitFor();
    expect(await longRow.locator('.summary').textContent()).toMatch(/…$/);
    await page.locator('li[aria-current="true"]').getByRole('link', { name: 'bulk-export', exact: true }).waitFor();
    await page.keyboard.press('a');
    await page.waitForTimeout(300);
    expect(await approvalOf(org, long.id)).toMatchObject({ status: 'pending' });

    // Search reads the loaded rows: action, payload summary, agent and policy.
    const search = page.getByRole('searchbox', { name: 'Search loaded requests' });
    await search.fill('CUS_42');
    expect(await inboxActions(page)).toEqual(['refund']);
    await search.fill('no such thing');
    await page.getByText('No loaded request matches “no such thing”.').waitFor();
    await search.fill('');

    await refundRow.getByRole('button', { name: /^Approve refund/ }).click();
    await page.getByRole('status').filter({ hasText: 'Approved refund' }).waitFor();
    expect(await approvalOf(org, refund.id)).toMatchObject({ status: 'approved' });
    await page.getByText('1 pending', { exact: true }).waitFor();

    // Every pending request, read-only: the server's filter changes, the rows offer no decision.
    await page.getByLabel('Show').selectOption('all');
    await list.getByRole('link', { name: 'bulk-export', exact: true }).waitFor();
    expect(await list.getByRole('button').count()).toBe(0);
    await screenshot(page, 'inbox-all-pending');
    await context.close();
  });
});

describe('who may do what', () => {
  it('a viewer sees no decide controls, keys do nothing, and the API refuses their decision', async () => {
    const { org, viewer } = await organization();
    const approval = await createApproval(org, 'viewer-cannot');
    const { context, page } = await signIn(browser, env, viewer);
    await page.getByRole('link', { name: 'viewer-cannot', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: /^(Approve|Reject)/ }).count()).toBe(0);
    // Sections that need scopes the role lacks are not offered.
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents()).toEqual([
      'Inbox',
      'History',
      'Audit',
      'Policies',
      'Webhooks',
      'Members',
      'Settings',
    ]);
    await page.keyboard.press('a');
    await page.keyboard.press('r');
    expect(await page.getByRole('dialog').count()).toBe(0);

    await page.getByRole('link', { name: 'viewer-cannot', exact: true }).click();
    await page.getByRole('heading', { name: 'viewer-cannot' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Decide' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Approve|Reject|Edit payload/ }).count()).toBe(0);

    const refused = await page.evaluate(async (id) => {
      const { csrfToken } = (await (await fetch('/v1/session')).json()) as { csrfToken: string };
      const response = await fetch(`/v1/approvals/${id}/decision`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: JSON.stringify({ verdict: 'approved' }),
      });
      return { status: response.status, code: ((await response.json()) as { code: string }).code };
    }, approval.id);
    expect(refused).toEqual({ status: 403, code: 'forbidden' });
    expect(await approvalOf(org, approval.id)).toMatchObject({ status: 'pending' });
    await context.close();
  });

  it('a vote through a key the member owns is theirs: not in their inbox, no decide controls, the vote names the key and them', async () => {
    const { org, admin, reviewer } = await organization();
    await org
      .request('put', '/v1/policies/refunds')
      .send({ ...POLICY, quorum: 2 })
      .expect(200);
    const approval = await createApproval(org, 'voted-by-key');
    const minted = await admin
      .request('post', '/v1/keys')
      .send({ scopes: ['approvals:decide'] })
      .expect(201);
    await env.http
      .post(`/v1/approvals/${approval.id}/decision`)
      .set('authorization', `Bearer ${minted.body.secret}`)
      .send({ verdict: 'approved' })
      .expect(200);

    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    // The reviewer's inbox has it: the admin's has not.
    expect((await reviewer.request('get', '/v1/approvals?decidable=true').expect(200)).body.approvals).toHaveLength(1);
    await page.getByText('Nothing waits for your decision.').waitFor();
    await page.goto(`/console/approvals/${approval.id}`);
    await page.getByRole('heading', { name: 'voted-by-key' }).waitFor();
    await page.getByText(`API key ${minted.body.key.id.slice(0, 8)} (of member ${admin.id.slice(0, 8)}): approved`).waitFor();
    expect(await page.getByRole('heading', { name: 'Decide' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Approve|Reject|Edit payload/ }).count()).toBe(0);
    await context.close();
  });

  it("a removed member's open console goes back to sign-in at its next request", async () => {
    const { org, reviewer } = await organization();
    const { context, page } = await signIn(browser, env, reviewer);
    await org.request('delete', `/v1/members/${reviewer.id}`).expect(204);
    // Its next request is the click's, or one the page makes by itself first (reopening its event
    // stream); either returns it to sign-in, and a click that finds the notice instead does nothing.
    const ended = page.getByText('Your session has ended; sign in again.');
    await page.getByRole('link', { name: 'History' }).or(ended).first().click();
    await ended.waitFor();
    await page.getByRole('heading', { name: 'Sign in to Approval Gate' }).waitFor();
    await context.close();
  });

  it('a write from the signed-in page without the CSRF token, or with a wrong one, is refused with csrf_failed', async () => {
    const { org, reviewer } = await organization();
    const approval = await createApproval(org, 'csrf-target');
    const { context, page } = await signIn(browser, env, reviewer);
    const attempts = await page.evaluate(async (id) => {
      const decide = async (headers: Record<string, string>) => {
        const response = await fetch(`/v1/approvals/${id}/decision`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ verdict: 'approved' }),
        });
        return { status: response.status, code: ((await response.json()) as { code: string }).code };
      };
      return [await decide({}), await decide({ 'x-csrf-token': 'guessed' })];
    }, approval.id);
    expect(attempts).toEqual([
      { status: 403, code: 'csrf_failed' },
      { status: 403, code: 'csrf_failed' },
    ]);
    expect(await approvalOf(org, approval.id)).toMatchObject({ status: 'pending' });
    await context.close();
  });
});

describe('policies', () => {
  it('lists policies a page at a time, and loads the next page on request', async () => {
    const { org, viewer } = await organization();
    const keys = Array.from({ length: 60 }, (_, i) => `p-${String(i).padStart(2, '0')}`);
    for (let start = 0; start < keys.length; start += 20) {
      await Promise.all(keys.slice(start, start + 20).map((key) => org.request('put', `/v1/policies/${key}`).send({}).expect(200)));
    }
    const { context, page } = await signIn(browser, env, viewer);
    await page.getByRole('link', { name: 'Policies' }).click();
    const rows = page.getByRole('region', { name: 'Policies' }).locator('tbody tr');
    await page.getByRole('link', { name: 'p-48' }).waitFor();
    expect(await rows.count()).toBe(50);
    expect(await page.getByRole('link', { name: 'refunds' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByRole('link', { name: 'refunds' }).waitFor();
    expect(await rows.count()).toBe(61);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await context.close();
  });

  it('shows a CEL error on the rule the server names, tries the draft against a sample request, and saves it', async () => {
    const { org, admin } = await organization();
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('link', { name: 'refunds' }).click();
    await page.getByLabel('Rule 1 condition (CEL)').waitFor();
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.getByLabel('Rule 2 condition (CEL)').fill('payload.amount >');
    await page.getByLabel('Rule 2 outcome').selectOption('allow');

    // Trying the draft is refused by the server for the same reason saving it would be.
    await page.getByRole('button', { name: 'Try the draft' }).click();
    const ruleError = page.locator('#rule-2-error');
    await ruleError.waitFor();
    expect(await ruleError.textContent()).toMatch(/^Rule 2 does not compile/);
    await page.getByText('The server cannot evaluate the draft as it is').waitFor();
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('The server refused the policy').waitFor();
    expect(await ruleError.textContent()).toMatch(/^Rule 2 does not compile/);
    expect(await page.getByLabel('Rule 2 condition (CEL)').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Rule 0 condition (CEL)').getAttribute('aria-invalid')).toBe('false');
    await screenshot(page, 'policy-editor');

    await page.getByLabel('Rule 2 condition (CEL)').fill('agent == "trusted-bot"');
    const tryPanel = page.getByRole('form', { name: 'Try against a sample request' });
    await tryPanel.getByLabel('Sample agent (optional)').fill('trusted-bot');
    await tryPanel.getByLabel('Sample payload (JSON)').fill('{ "amount": 50 }');
    await tryPanel.getByRole('button', { name: 'Try the draft' }).click();
    await tryPanel.getByText('Outcome: allow. Rule 2 matched.').waitFor();
    await tryPanel.getByLabel('Sample payload (JSON)').fill('{ "amount": 5 }');
    await tryPanel.getByRole('button', { name: 'Try the draft' }).click();
    await tryPanel.getByText('Outcome: allow. Rule 0 matched.').waitFor();
    // Nothing was saved by trying.
    expect((await org.request('get', '/v1/policies/refunds').expect(200)).body.rules).toHaveLength(2);

    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.').waitFor();
    const stored = (await org.request('get', '/v1/policies/refunds').expect(200)).body;
    expect(stored.rules[2]).toEqual({ when: 'agent == "trusted-bot"', outcome: 'allow' });
    await context.close();
  });

  it('keeps who decides, the quorum and the channels when a policy is saved from the editor', async () => {
    const { org, admin } = await organization();
    await org
      .request('put', '/v1/policies/payouts')
      .send({
        reviewers: { roles: ['admin'], members: ['lead@acme.test'] },
        quorum: 2,
        allowSelfApproval: true,
        channels: ['console', 'slack'],
      })
      .expect(200);
    const { context, page } = await signIn(browser, env, admin);
    await page.goto('/console/policies/payouts');
    await page.getByLabel('Approvals needed (quorum)').waitFor();
    expect(await page.getByLabel('Approvals needed (quorum)').inputValue()).toBe('2');
    await page.getByLabel('Timeout (seconds)').fill('7200');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await org.request('get', '/v1/policies/payouts').expect(200)).body).toMatchObject({
      timeoutSeconds: 7200,
      reviewers: { roles: ['admin'], members: ['lead@acme.test'] },
      quorum: 2,
      allowSelfApproval: true,
      channels: ['console', 'slack'],
    });
    await context.close();
  });

  it("keeps a policy's stages of reviewers when it is saved from the editor", async () => {
    const { org, admin } = await organization();
    const stages = [
      { name: 'Team lead', reviewers: { roles: ['reviewer'], members: [] }, quorum: 1 },
      { name: 'Finance', reviewers: { roles: ['admin'], members: [] }, quorum: 2 },
    ];
    await org.request('put', '/v1/policies/staged').send({ stages }).expect(200);
    const { context, page } = await signIn(browser, env, admin);
    await page.goto('/console/policies/staged');
    await page.getByLabel('Timeout (seconds)').fill('7200');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = (await org.request('get', '/v1/policies/staged').expect(200)).body;
    expect(saved).toMatchObject({ timeoutSeconds: 7200, stages });
    expect(saved).not.toHaveProperty('quorum');
    await context.close();
  });
});

describe('administration', () => {
  it('creates an API key shown once, which works until it is revoked', async () => {
    const { org, admin } = await organization();
    // A key made before keys had owners, whose maker nobody recorded (docs/members-and-channels.md#keys-made-before-owners).
    const legacy = await env.createKey(org.orgId, ['approvals:read']);
    await env.services.db.apiKey.update({ where: { id: legacy.id }, data: { ownerUnknown: true } });
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'API keys' }).click();
    const form = page.getByRole('form', { name: 'New API key' });
    await form.getByLabel('Name (optional)').fill('nightly-agent');
    await form.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('API key nightly-agent').inputValue();
    expect(secret).toMatch(/^agk_/);
    await env.http.get('/v1/approvals').set('authorization', `Bearer ${secret}`).expect(200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.getByLabel('API key nightly-agent').count()).toBe(0);
    // The key made in the console is the admin's; the CLI's keys are service keys.
    const row = page.getByRole('row').filter({ hasText: 'nightly-agent' });
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('you');
    expect(
      await page
        .getByRole('row')
        .filter({ hasText: org.keyId.slice(0, 8) })
        .getByRole('cell')
        .nth(2)
        .textContent(),
    ).toBe('service key');
    expect(
      await page
        .getByRole('row')
        .filter({ hasText: legacy.id.slice(0, 8) })
        .getByRole('cell')
        .nth(2)
        .textContent(),
    ).toBe('unknown: votes for nobody until attributed (key:attribute)');

    await page.getByRole('button', { name: 'Revoke key nightly-agent' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('cell', { name: /^revoked/ }).waitFor();
    await env.http.get('/v1/approvals').set('authorization', `Bearer ${secret}`).expect(401);
    await context.close();
  });

  it('changes roles, refuses to demote the last admin, links and clears Slack, and removes a member', async () => {
    const { org, admin, viewer } = await organization();
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('combobox', { name: `Role of ${viewer.email}` }).selectOption('reviewer');
    await eventually(
      async () =>
        (await org.request('get', '/v1/members').expect(200)).body.members.find((m: { id: string }) => m.id === viewer.id).role ===
        'reviewer',
    );

    await page.getByRole('combobox', { name: `Role of ${admin.email}` }).selectOption('viewer');
    await page.getByRole('alert').filter({ hasText: 'last admin' }).waitFor();

    await page.getByRole('button', { name: `Link Slack identity of ${viewer.email}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Slack team id').fill('T0001');
    await dialog.getByLabel('Slack user id').fill('U0001');
    await dialog.getByRole('button', { name: 'Link' }).click();
    await page.getByRole('button', { name: `Clear Slack link of ${viewer.email}` }).click();
    await page.getByRole('button', { name: `Link Slack identity of ${viewer.email}` }).waitFor();

    await page.getByRole('button', { name: `Remove ${viewer.email}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
    await page.getByRole('cell', { name: viewer.email, exact: true }).waitFor({ state: 'detached' });
    await viewer.agent.get('/v1/session').expect(401);
    await context.close();
  });

  it('a member turns their own email notifications off', async () => {
    const { org, reviewer } = await organization();
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('link', { name: 'Settings' }).click();
    const toggle = page.getByLabel('Email me when a request waits for my decision');
    expect(await toggle.isChecked()).toBe(true);
    await toggle.uncheck();
    await eventually(async () => {
      const { members } = (await org.request('get', '/v1/members').expect(200)).body as {
        members: { id: string; emailNotifications: boolean }[];
      };
      return members.find((member) => member.id === reviewer.id)?.emailNotifications === false;
    });
    await context.close();
  });

  it('registers a webhook endpoint (secret shown once), lists its deliveries and attempts, redelivers and rotates the secret', async () => {
    const receiver = await startReceiver();
    try {
      const { org, admin } = await organization();
      const { context, page } = await signIn(browser, env, admin);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByLabel('URL').fill(receiver.url('/hooks'));
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      expect(await page.getByLabel(`Signing secret of ${receiver.url('/hooks')}`).inputValue()).toMatch(/^whsec_/);
      await page.getByRole('button', { name: 'I have copied it' }).click();

      const approval = await createApproval(org, 'hooked');
      await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
      await eventually(() => receiver.received.length === 1);

      await page.getByRole('link', { name: receiver.url('/hooks') }).click();
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      await page.getByText('1 attempt', { exact: false }).waitFor();
      await page.getByText(/^Attempts of delivery/).click();
      await page.getByRole('cell', { name: '204' }).waitFor();
      await page.getByRole('button', { name: /^Redeliver approval.approved/ }).click();
      await eventually(() => receiver.received.length === 2);
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      await page.getByText('2 attempts', { exact: false }).waitFor();

      await page.getByRole('button', { name: 'Rotate secret…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      expect(await page.getByLabel('New signing secret').inputValue()).toMatch(/^whsec_/);
      await context.close();
    } finally {
      await receiver.close();
    }
  });

  it('verifies the audit chain, exports a selection for download, and filters the history', async () => {
    const { org, admin } = await organization();
    const rejected = await createApproval(org, 'history-rejected');
    await org.asReviewer('post', `/v1/approvals/${rejected.id}/decision`).send({ verdict: 'rejected' }).expect(200);
    await createApproval(org, 'history-pending');
    const { context, page } = await signIn(browser, env, admin);

    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await page.getByText(/^Intact: \d+ events and 0 signed checkpoints checked/).waitFor();
    await page.getByLabel('Event type').selectOption('approval.rejected');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/type=approval.rejected/);
    await page.getByRole('button', { name: 'Export selection as CSV' }).click();
    const download = page.getByRole('link', { name: 'Download CSV (1 events)' });
    await download.waitFor({ timeout: 10_000 });
    const [file] = await Promise.all([page.waitForEvent('download'), download.click()]);
    const csv = await new Response(Readable.toWeb(await file.createReadStream()) as ReadableStream).text();
    expect(csv.split('\n')[0]).toBe('seq,createdAt,type,actor,data,prevHash,hash');
    expect(csv).toContain('approval.rejected');

    await page.getByRole('link', { name: 'History' }).click();
    await page.getByRole('group', { name: 'Status' }).getByLabel('rejected').check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=rejected/);
    // The unfiltered list showed both: the pending one must go, the rejected one stay.
    await page.getByRole('link', { name: 'history-pending', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'history-rejected', exact: true }).waitFor();
    await context.close();
  });
});

describe('layout and accessibility', () => {
  /** Every console page of a signed-in admin, and a text that says it has loaded. */
  async function consolePages() {
    const { org, admin } = await organization();
    const approval = await createApproval(org, 'a-rather-long-action-name-for-a-phone-screen', {
      amount: 4200,
      currency: 'EUR',
      customer: 'cus_42',
    });
    await org
      .asReviewer('post', `/v1/approvals/${(await createApproval(org, 'settled-one')).id}/decision`)
      .send({ verdict: 'rejected' })
      .expect(200);
    await createMember(env, org, 'reviewer', 'a.member.with.a.rather.long.address@example-organization.test');
    // Path, a text that says it has loaded, and the name of its screenshot.
    const pages: [string, string, string][] = [
      ['/', 'a-rather-long-action-name-for-a-phone-screen', 'inbox'],
      [`/approvals/${approval.id}`, 'approval.created', 'approval'],
      ['/history', 'a-rather-long-action-name-for-a-phone-screen', 'history'],
      ['/audit', 'Data of event 1', 'audit'],
      ['/policies', 'refunds', 'policies'],
      ['/policies/refunds', 'Rule 0 condition (CEL)', 'policy-editor'],
      ['/webhooks', 'No endpoints yet.', 'webhooks'],
      ['/keys', 'New API key', 'keys'],
      ['/members', 'a.member.with.a.rather.long.address@example-organization.test', 'members'],
      ['/settings', 'Email me when a request waits for my decision', 'settings'],
    ];
    return { org, admin, approval, pages };
  }

  it('is usable 390 px wide: no sideways scrolling, named controls, Decide above the fold, readable members, nothing from another origin', async () => {
    const { admin, approval, pages } = await consolePages();
    const { context, page } = await signIn(browser, env, admin, { width: 390, height: 844 });
    const origins = new Set<string>();
    page.on('request', (request) => origins.add(new URL(request.url()).origin));
    for (const [path, loaded] of pages) {
      await page.goto(`/console${path}`);
      await page.getByText(loaded).first().waitFor();
      expect(await overflowsHorizontally(page), path).toBe(false);
      expect(await unnamedControls(page), path).toEqual([]);
    }
    expect([...origins]).toEqual([env.baseUrl]);

    // The header takes little height, and an approval's decision is on the first screen.
    await page.goto(`/console/approvals/${approval.id}`);
    const header = (await page.locator('header.top').boundingBox())!;
    expect(header.height).toBeLessThanOrEqual(120);
    const decide = (await page.getByRole('button', { name: 'Approve', exact: true }).boundingBox())!;
    expect(decide.y + decide.height).toBeLessThanOrEqual(844);
    await screenshot(page, 'approval-phone', { fullPage: false });

    // Members: the role select keeps its width, and an email breaks into lines of many characters.
    await page.goto('/console/members');
    const select = (await page.getByLabel(`Role of ${admin.email}`).boundingBox())!;
    expect(select.width).toBeGreaterThanOrEqual(90);
    const email = page.locator('td', { hasText: /^a\.member\.with\.a\.rather\.long/ });
    const box = (await email.boundingBox())!;
    expect(box.width).toBeGreaterThanOrEqual(120);
    await screenshot(page, 'members-phone');

    await page.goto('/console/');
    await page.getByText('a-rather-long-action-name-for-a-phone-screen').waitFor();
    await screenshot(page, 'inbox-phone');
    await context.close();
  });

  for (const [name, viewport] of [
    ['desktop', { width: 1200, height: 900 }],
    ['390 px', { width: 390, height: 844 }],
  ] as const) {
    it(`has no serious or critical axe-core violation on any page (${name})`, async () => {
      const { admin, pages } = await consolePages();
      const { context, page } = await signIn(browser, env, admin, viewport);
      for (const [path, loaded, shot] of pages) {
        await page.goto(`/console${path}`);
        await page.getByText(loaded).first().waitFor();
        expect(await seriousAccessibilityViolations(page), path).toEqual([]);
        if (name === 'desktop') {
          // An admin's header (every section, the email, the role, Sign out) is one line at 1200 px.
          const parts = await page.locator('header.top').locator('.brand, nav a, .who .email, .who button').all();
          const middles = await Promise.all(parts.map(async (part) => ((box) => box!.y + box!.height / 2)(await part.boundingBox())));
          expect(Math.max(...middles) - Math.min(...middles), path).toBeLessThan(8);
        }
        await screenshot(page, `console-${shot}${name === 'desktop' ? '' : '-phone'}`);
      }
      await context.close();
    });
  }
});
