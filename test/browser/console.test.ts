import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, openContext, overflowsHorizontally, screenshot, signIn, unnamedControls } from '../support/browser.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let env: TestEnv;
let browser: Browser;

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv({ CONSOLE_DIR: inject('consoleDir') }), launchBrowser()]);
});
afterAll(async () => {
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
  return page.getByRole('list', { name: 'Pending approvals' }).getByRole('link').allTextContents();
}

describe('signing in and out', () => {
  it('refuses a wrong password, signs in, and signs out on the server', async () => {
    const { reviewer } = await organization();
    const context = await openContext(browser, env);
    const page = await context.newPage();
    await page.goto('/console/');
    await page.getByRole('heading', { name: 'Sign in to Approval Gate' }).waitFor();
    await screenshot(page, 'sign-in');

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
    const { admin } = await organization();
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'Members' }).click();
    const form = page.getByRole('form', { name: 'Invite a member' });
    await form.getByLabel('Email').fill('new.reviewer@acme.test');
    await form.getByLabel('Role').selectOption('reviewer');
    await form.getByRole('button', { name: 'Send invite' }).click();
    const inviteUrl = await page.getByRole('textbox', { name: 'Invite link of new.reviewer@acme.test' }).inputValue();
    expect(inviteUrl).toMatch(/\/console\/invite\/[\w-]+$/);
    await context.close();

    const invitee = await openContext(browser, env);
    const invitePage = await invitee.newPage();
    await invitePage.goto(new URL(inviteUrl).pathname);
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
    await latePage.getByLabel('New password').fill('another-long-password');
    await latePage.getByLabel('Repeat the password').fill('another-long-password');
    await latePage.getByRole('button', { name: 'Set password and sign in' }).click();
    await latePage.getByText('This invite is used or expired.').waitFor();
    await late.close();
  });
});

describe('deciding', () => {
  it("shows an approval's request, policy rule, hash, time left and audit events, and approves it as the member", async () => {
    const { org, reviewer } = await organization();
    const approval = await createApproval(org, 'refund-approve');
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('link', { name: 'refund-approve' }).click();
    await page.getByRole('heading', { name: 'refund-approve' }).waitFor();

    await page.getByText('Rule 1 (payload.amount > 100) matched: review.').waitFor();
    await page.getByText('billing-bot', { exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'refunds' }).count()).toBe(1);
    expect(await page.getByLabel('Payload', { exact: true }).textContent()).toBe(JSON.stringify({ amount: 500 }, null, 2));
    expect(await page.getByLabel('Context', { exact: true }).textContent()).toContain('"reason": "customer asked twice"');
    await page.getByText(approval.payloadHash, { exact: true }).waitFor();
    await page.getByText(/\d+ min( \d+ s)? left/).waitFor();
    await page.getByRole('region', { name: 'Audit events of this approval' }).getByText('approval.created').waitFor();
    await screenshot(page, 'approval');

    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('.page-head .badge', { hasText: 'approved' }).waitFor();
    const decided = await approvalOf(org, approval.id);
    expect(decided).toMatchObject({ status: 'approved', decidedBy: { type: 'user', id: reviewer.id, email: reviewer.email } });
    await page.getByRole('region', { name: 'Audit events of this approval' }).getByText('approval.approved').waitFor();
    await context.close();
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
    await page.getByText('Refunds above 100 need a receipt.').waitFor();
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
    const diff = page.getByLabel('Your change to the payload');
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

  it('triages the inbox from the keyboard: j/k move, a approves, r rejects with feedback, enter opens', async () => {
    const { org, reviewer } = await organization();
    const first = await createApproval(org, 'triage-1');
    const second = await createApproval(org, 'triage-2');
    const third = await createApproval(org, 'triage-3');
    const { context, page } = await signIn(browser, env, reviewer);
    await page.getByRole('link', { name: 'triage-1' }).waitFor();
    expect(await inboxActions(page)).toEqual(['triage-3', 'triage-2', 'triage-1']);
    const selected = () => page.locator('li[aria-current="true"]').getByRole('link').textContent();
    expect(await selected()).toBe('triage-3');

    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await selected()).toBe('triage-1');
    await page.keyboard.press('k');
    expect(await selected()).toBe('triage-2');

    await page.keyboard.press('a');
    await page.getByRole('status').filter({ hasText: 'Approved triage-2' }).waitFor();
    expect(await approvalOf(org, second.id)).toMatchObject({ status: 'approved' });
    expect(await inboxActions(page)).toEqual(['triage-3', 'triage-1']);
    expect(await selected()).toBe('triage-1');

    await page.keyboard.press('r');
    const dialog = page.getByRole('dialog', { name: 'Reject triage-1' });
    await dialog.getByLabel('Feedback for the agent').fill('Duplicate of triage-3.');
    await dialog.getByRole('button', { name: 'Reject' }).click();
    await page.getByRole('status').filter({ hasText: 'Rejected triage-1' }).waitFor();
    expect(await approvalOf(org, first.id)).toMatchObject({ status: 'rejected', feedback: 'Duplicate of triage-3.' });

    await page.keyboard.press('Enter');
    await page.waitForURL(`**/console/approvals/${third.id}`);
    await page.getByRole('heading', { name: 'triage-3' }).waitFor();
    await context.close();
  });
});

describe('who may do what', () => {
  it('a viewer sees no decide controls, keys do nothing, and the API refuses their decision', async () => {
    const { org, viewer } = await organization();
    const approval = await createApproval(org, 'viewer-cannot');
    const { context, page } = await signIn(browser, env, viewer);
    await page.getByRole('link', { name: 'viewer-cannot' }).waitFor();
    expect(await page.getByRole('button', { name: /^(Approve|Reject)/ }).count()).toBe(0);
    await page.keyboard.press('a');
    await page.keyboard.press('r');
    expect(await page.getByRole('dialog').count()).toBe(0);

    await page.getByRole('link', { name: 'viewer-cannot' }).click();
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
  it('shows the CEL error on the rule the server names, and saves once it is fixed', async () => {
    const { org, admin } = await organization();
    const { context, page } = await signIn(browser, env, admin);
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('link', { name: 'refunds' }).click();
    await page.getByLabel('Rule 1 condition (CEL)').waitFor();
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.getByLabel('Rule 2 condition (CEL)').fill('payload.amount >');
    await page.getByLabel('Rule 2 outcome').selectOption('allow');
    await page.getByRole('button', { name: 'Save policy' }).click();

    const ruleError = page.locator('#rule-2-error');
    await ruleError.waitFor();
    expect(await ruleError.textContent()).toMatch(/^Rule 2 does not compile/);
    expect(await page.getByLabel('Rule 2 condition (CEL)').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Rule 0 condition (CEL)').getAttribute('aria-invalid')).toBe('false');
    expect(await page.getByRole('button', { name: 'Try the draft' }).isDisabled()).toBe(true);
    await screenshot(page, 'policy-editor');

    await page.getByLabel('Rule 2 condition (CEL)').fill('agent == "trusted-bot"');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.').waitFor();
    const stored = (await org.request('get', '/v1/policies/refunds').expect(200)).body;
    expect(stored.rules[2]).toEqual({ when: 'agent == "trusted-bot"', outcome: 'allow' });
    await context.close();
  });
});

describe('layout and accessibility', () => {
  it('is usable 375 px wide and every control has an accessible name, on every page', async () => {
    const { org, admin } = await organization();
    const approval = await createApproval(org, 'a-rather-long-action-name-for-a-phone-screen');
    const { context, page } = await signIn(browser, env, admin, { width: 375, height: 740 });
    const pages: [string, string][] = [
      ['/', 'a-rather-long-action-name-for-a-phone-screen'],
      [`/approvals/${approval.id}`, 'approval.created'],
      ['/history', 'a-rather-long-action-name-for-a-phone-screen'],
      ['/audit', 'Data of event 1'],
      ['/policies', 'refunds'],
      ['/policies/refunds', 'Rule 0 condition (CEL)'],
      ['/webhooks', 'No endpoints yet.'],
      ['/members', admin.email],
      ['/settings', 'Email me when a request waits for my decision'],
    ];
    for (const [path, loaded] of pages) {
      await page.goto(`/console${path}`);
      await page.getByText(loaded).first().waitFor();
      expect(await overflowsHorizontally(page), path).toBe(false);
      expect(await unnamedControls(page), path).toEqual([]);
    }
    await page.goto('/console/');
    await screenshot(page, 'inbox-phone');
    await context.close();
  });
});
