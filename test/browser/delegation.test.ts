import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isoToLocalInput } from '../../src/console/lib/datetime-input.js';
import { launchBrowser, overflowsHorizontally, screenshot, seriousAccessibilityViolations, signIn } from '../support/browser.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let env: TestEnv;
let browser: Browser;
let org: TestOrg;
let alice: TestMember;
let dave: TestMember;
let vic: TestMember;

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv({ CONSOLE_DIR: inject('consoleDir') }), launchBrowser()]);
  org = await env.createOrg();
  [alice, dave, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'dave@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  await org
    .request('put', '/v1/policies/alice-only')
    .send({ reviewers: { roles: [], members: [alice.email] } })
    .expect(200);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

describe('delegation in the console', () => {
  it('lets a member name a delegate until a time, offering only members who may decide, and end it; the delegate then decides', async () => {
    const { context, page } = await signIn(browser, env, alice);
    // The members are held back until the form has been seen without them: it must not offer an empty choice.
    let releaseMembers!: () => void;
    const membersReleased = new Promise<void>((resolve) => (releaseMembers = resolve));
    await page.route(
      (url) => url.pathname === '/v1/members',
      async (route) => {
        await membersReleased;
        await route.continue().catch(() => undefined);
      },
    );
    await page.goto('/console/settings');
    await page.getByRole('heading', { name: 'While you are away' }).waitFor();
    expect(await page.getByLabel('Delegate').isDisabled()).toBe(true);
    expect(await page.getByLabel('Delegate').locator('option').allTextContents()).toEqual(['Loading members…']);
    releaseMembers();
    await page.getByLabel('Delegate').and(page.locator(':enabled')).waitFor();
    const delegates = await page.getByLabel('Delegate').locator('option').allTextContents();
    expect(delegates).toEqual(['Choose a member', 'dave@acme.test']);
    await page.getByLabel('Delegate').selectOption({ label: 'dave@acme.test' });
    await page.getByLabel('Until').fill(isoToLocalInput(new Date(Date.now() + 7 * 86_400_000).toISOString()));
    await page.getByRole('button', { name: 'Delegate' }).click();
    await page.getByRole('status').filter({ hasText: 'dave@acme.test decides in your place' }).waitFor();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, 'settings-delegation');

    // Dave decides a request only Alice is named for.
    const created = await org
      .request('post', '/v1/approvals')
      .send({ action: 'pay', payload: { amount: 5 }, policyKey: 'alice-only' })
      .expect(201);
    await dave.request('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'approved' }).expect(200);

    await page.getByRole('button', { name: 'End it now' }).click();
    await page.getByText('Name someone to decide the requests waiting for you').waitFor();
    const after = await org
      .request('post', '/v1/approvals')
      .send({ action: 'pay', payload: { amount: 6 }, policyKey: 'alice-only' })
      .expect(201);
    await dave.request('post', `/v1/approvals/${after.body.id}/decision`).send({ verdict: 'approved' }).expect(403);
    await context.close();
  });

  it('shows a refusal next to the form, and fits a phone', async () => {
    const { context, page } = await signIn(browser, env, alice, { width: 390, height: 844 });
    await page.goto('/console/settings');
    await page.getByLabel('Delegate').selectOption({ label: 'dave@acme.test' });
    await page.getByLabel('Until').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Delegate' }).click();
    await page.getByText('endsAt must be in the future').waitFor();
    expect(await overflowsHorizontally(page)).toBe(false);
    await context.close();
  });

  it('offers a viewer nothing to delegate', async () => {
    const { context, page } = await signIn(browser, env, vic);
    await page.goto('/console/settings');
    await page.getByRole('heading', { name: 'Your settings' }).waitFor();
    expect(await page.getByRole('heading', { name: 'While you are away' }).count()).toBe(0);
    await context.close();
  });
});
