import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, screenshot, signIn, unnamedControls } from '../support/browser.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let env: TestEnv;
let browser: Browser;
let org: TestOrg;
let alice: TestMember;
let bob: TestMember;
let carol: TestMember;

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv({ CONSOLE_DIR: inject('consoleDir') }), launchBrowser()]);
  org = await env.createOrg();
  [alice, bob, carol] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
  ]);
  await org
    .request('put', '/v1/policies/deploys')
    .send({ standingApproval: { maxSeconds: 3600 } })
    .expect(200);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const ask = async (payload: Record<string, unknown>) =>
  (await org.request('post', '/v1/approvals').send({ action: 'deploy', payload, policyKey: 'deploys', agent: 'ship-bot' })).body as {
    id: string;
    status: string;
  };

describe('standing approvals in the console', () => {
  it('are granted from the decide page, listed, and revoked by their granter; another reviewer may not revoke them', async () => {
    const first = await ask({ service: 'api', version: '1.4.2' });
    const { context, page } = await signIn(browser, env, alice);
    await page.goto(`/console/approvals/${first.id}`);
    await page.getByRole('group', { name: 'Approve the same again' }).waitFor();
    await page.getByLabel('Also approve identical requests from ship-bot for').check();
    await page.getByLabel('Duration').selectOption({ label: '15 minutes' });
    await page.getByLabel('the same values of these fields:').check();
    // `service` is picked first; the version may change.
    expect(await page.getByRole('checkbox', { name: 'service' }).isChecked()).toBe(true);
    expect(await unnamedControls(page)).toEqual([]);
    await screenshot(page, 'standing-approval-decide');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('approved', { exact: true }).first().waitFor();

    expect((await ask({ service: 'api', version: '1.4.3' })).status).toBe('approved');
    expect((await ask({ service: 'web', version: '1.4.3' })).status).toBe('pending');

    // Reached from the inbox, where the requests it approves would otherwise wait.
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('link', { name: 'Standing approvals' }).click();
    const table = page.getByRole('region', { name: 'Standing approvals' });
    await table.getByRole('row').nth(1).waitFor();
    expect(await table.getByRole('row').nth(1).innerText()).toMatch(/deploys\s+deploy\s+ship-bot\s+service = "api"\s+you/);
    await screenshot(page, 'standing-approvals');

    // Bob sees it, without a way to revoke it.
    const bobs = await signIn(browser, env, bob);
    await bobs.page.goto('/console/standing-approvals');
    await bobs.page.getByRole('region', { name: 'Standing approvals' }).getByRole('row').nth(1).waitFor();
    expect(await bobs.page.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
    await bobs.context.close();

    await page.getByRole('button', { name: 'Revoke the standing approval of deploy for ship-bot' }).click();
    await page.getByRole('button', { name: 'Revoke standing approval' }).click();
    await page.getByText('No standing approvals are active.').waitFor();
    expect((await ask({ service: 'api', version: '1.4.4' })).status).toBe('pending');
    await context.close();
  });

  it('are kept, with reminders, when an admin saves the policy from the editor, and a bad maximum is marked on its field', async () => {
    const { context, page } = await signIn(browser, env, carol);
    await page.goto('/console/policies/deploys');
    const standing = page.getByLabel(/^A reviewer may approve the same again for up to/);
    await standing.waitFor();
    expect(await standing.inputValue()).toBe('3600');
    await page.getByLabel(/^Remind who has not decided after/).fill('300');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.', { exact: false }).waitFor();
    const saved = (await org.request('get', '/v1/policies/deploys').expect(200)).body;
    expect(saved).toMatchObject({ standingApproval: { maxSeconds: 3600 }, remindAfterSeconds: 300, remindEverySeconds: null });

    await standing.fill('100000');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /86400|86,400/ })
      .first()
      .waitFor();
    expect((await org.request('get', '/v1/policies/deploys').expect(200)).body.standingApproval).toEqual({ maxSeconds: 3600 });
    await context.close();
  });
});
