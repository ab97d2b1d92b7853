import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, overflowsHorizontally, screenshot, signIn, unnamedControls } from '../support/browser.js';
import { createMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';
import { startWorkerRuntime, type WorkerRuntime } from '../../workers/worker-runtime.js';

let env: TestEnv;
let browser: Browser;
let worker: WorkerRuntime;

beforeAll(async () => {
  [env, browser] = await Promise.all([
    createTestEnv({ CONSOLE_DIR: inject('consoleDir'), OUTBOX_POLL_INTERVAL_MS: '100' }),
    launchBrowser(),
  ]);
  // The relay feeds the live feed that reloads the page when the agent revises the request.
  worker = await startWorkerRuntime(env.services, ['outbox-relay']);
});
afterAll(async () => {
  await worker?.stop();
  await browser?.close();
  await env?.close();
});

const PAYLOAD = { amount: 500, currency: 'EUR', to: { iban: 'DE01 2345', name: 'Ada Lovelace' } };
const SUGGESTED = { amount: 250, currency: 'EUR', to: { iban: 'DE99 8765', name: 'Ada Lovelace' } };

async function approvalOf(org: TestOrg, id: string) {
  return (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
}

/** The rows of a field-by-field diff: field, before, after. */
async function fieldRows(page: Page, title: string): Promise<string[][]> {
  const rows = page.getByRole('region', { name: title }).locator('tbody tr');
  const out: string[][] = [];
  for (let i = 0; i < (await rows.count()); i++) out.push((await rows.nth(i).locator('th, td').allTextContents()).map((t) => t.trim()));
  return out;
}

describe('requesting changes in the console', () => {
  it('asks with feedback and a suggested payload shown as a diff first; after the revision shows what changed and why', async () => {
    const org = await env.createOrg();
    await org.request('put', '/v1/policies/refunds').send({}).expect(200);
    const reviewer = await createMember(env, org, 'reviewer');
    const created = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: 'refund-customer', payload: PAYLOAD, policyKey: 'refunds', agent: 'billing-bot' })
        .expect(201)
    ).body as { id: string };

    const { context, page } = await signIn(browser, env, reviewer);
    await page.goto(`/console/approvals/${created.id}`);
    await page.getByRole('button', { name: 'Request changes…' }).click();
    const form = page.getByRole('form', { name: 'Request changes' });
    const review = form.getByRole('button', { name: 'Review request' });
    expect(await review.isDisabled()).toBe(true);

    const feedback = form.getByLabel('What should the agent change? (required)');
    expect(await feedback.getAttribute('maxlength')).toBe('2000');
    await feedback.fill('Refund half, to the IBAN on file.');
    await form.getByText('33 of 2,000 characters').waitFor();
    await form.getByLabel('Suggest a payload I would approve').check();
    const editor = form.getByLabel('Suggested payload (JSON)');
    await editor.fill('{ "amount": ');
    await form.getByText(/^Not valid JSON/).waitFor();
    expect(await review.isDisabled()).toBe(true);
    await editor.fill(JSON.stringify(SUGGESTED, null, 2));
    expect(await review.isDisabled()).toBe(false);
    expect(await unnamedControls(page)).toEqual([]);
    await screenshot(page, 'request-changes-form');

    await review.click();
    expect(await fieldRows(page, 'Your suggested payload')).toEqual([
      ['amount', '500', '250'],
      ['to.iban', '"DE01 2345"', '"DE99 8765"'],
    ]);
    // Line by line, keys sorted: only the changed lines, whatever order the database keeps keys in.
    const lines = page.getByLabel('Your suggested payload, line by line');
    expect(await lines.locator('del').allTextContents()).toEqual(['-   "amount": 500,', '-     "iban": "DE01 2345",']);
    expect(await lines.locator('ins').allTextContents()).toEqual(['+   "amount": 250,', '+     "iban": "DE99 8765",']);
    await page.getByLabel('Your feedback').getByText('Refund half, to the IBAN on file.').waitFor();
    await screenshot(page, 'request-changes-review');
    expect(await approvalOf(org, created.id)).toMatchObject({ status: 'pending' });

    await page.getByRole('button', { name: 'Send request for changes' }).click();
    await page.locator('.page-head .badge', { hasText: 'changes requested' }).waitFor();
    await page.getByRole('heading', { name: 'Changes requested' }).waitFor();
    expect(await fieldRows(page, 'Suggested payload')).toEqual([
      ['amount', '500', '250'],
      ['to.iban', '"DE01 2345"', '"DE99 8765"'],
    ]);
    expect(await approvalOf(org, created.id)).toMatchObject({
      status: 'changes_requested',
      feedback: 'Refund half, to the IBAN on file.',
      suggestedPayload: SUGGESTED,
      decidedBy: { type: 'user', email: reviewer.email },
    });
    await screenshot(page, 'changes-requested');

    // The agent revises through the API; the open page follows it through the live feed.
    await org
      .request('post', `/v1/approvals/${created.id}/revisions`)
      .send({ payload: { ...SUGGESTED, memo: 'half now, half after the return' }, note: 'Took the suggestion, with a memo.' })
      .expect(201);
    await page.getByRole('heading', { name: 'What changed in revision 2' }).waitFor();
    await page.locator('.page-head .badge', { hasText: 'pending' }).waitFor();
    expect(await fieldRows(page, 'Payload: revision 1 → 2')).toEqual([
      ['amount', '500', '250'],
      ['memo', '(absent)', '"half now, half after the return"'],
      ['to.iban', '"DE01 2345"', '"DE99 8765"'],
    ]);
    await page.getByLabel('Feedback that asked for this revision').getByText('Refund half, to the IBAN on file.').waitFor();
    await page.getByText('Took the suggestion, with a memo.').first().waitFor();
    const revisions = page.getByRole('region', { name: 'Revisions of this request' }).locator('tbody tr');
    expect(await revisions.count()).toBe(2);
    expect(await unnamedControls(page)).toEqual([]);
    await screenshot(page, 'revision-diff');
    await context.close();

    // At 390 px: nothing overflows, and the request for changes works from the keyboard alone.
    const phone = await signIn(browser, env, reviewer, { width: 390, height: 844 });
    await phone.page.goto(`/console/approvals/${created.id}`);
    await phone.page.getByRole('heading', { name: 'What changed in revision 2' }).waitFor();
    expect(await overflowsHorizontally(phone.page)).toBe(false);
    await screenshot(phone.page, 'revision-diff-390');
    await phone.page.getByRole('button', { name: 'Request changes…' }).focus();
    await phone.page.keyboard.press('Enter');
    await phone.page.keyboard.type('Add the return tracking number to the memo.');
    await phone.page.keyboard.press('Tab');
    await phone.page.keyboard.press('Space');
    await phone.page.getByLabel('Suggested payload (JSON)').waitFor();
    expect(await overflowsHorizontally(phone.page)).toBe(false);
    await screenshot(phone.page, 'request-changes-form-390');
    await phone.page.getByLabel('Suggest a payload I would approve').focus();
    await phone.page.keyboard.press('Space');
    await phone.page.getByRole('button', { name: 'Review request' }).focus();
    await phone.page.keyboard.press('Enter');
    await phone.page.getByRole('button', { name: 'Send request for changes' }).focus();
    await phone.page.keyboard.press('Enter');
    await phone.page.locator('.page-head .badge', { hasText: 'changes requested' }).waitFor();
    expect(await approvalOf(org, created.id)).toMatchObject({
      status: 'changes_requested',
      revision: 2,
      feedback: 'Add the return tracking number to the memo.',
      suggestedPayload: null,
    });
    expect(await overflowsHorizontally(phone.page)).toBe(false);
    await screenshot(phone.page, 'changes-requested-390');
    await phone.context.close();
  });
});
