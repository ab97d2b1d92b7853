import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../../workers/worker-runtime.js';
import { launchBrowser, openContext, overflowsHorizontally, screenshot, unnamedControls } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { createMember } from '../support/members.js';
import { buttonPress, signedInteraction, startSlackApi, SLACK_TEAM_ID, type SlackApi } from '../support/slack-api.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

const SIGNING_SECRET = 'b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9';

let env: TestEnv;
let browser: Browser;
let slack: SlackApi;
let worker: WorkerRuntime;
let org: TestOrg;

beforeAll(async () => {
  slack = await startSlackApi();
  [env, browser] = await Promise.all([
    createTestEnv({
      CONSOLE_DIR: inject('consoleDir'),
      SLACK_API_URL: slack.url,
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      SLACK_MESSAGE_INTERVAL_MS: '20',
      OUTBOX_POLL_INTERVAL_MS: '100',
    }),
    launchBrowser(),
  ]);
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'slack-post', 'slack-ephemeral']);
  org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  await org
    .request('put', '/v1/integrations/slack')
    .send({ botToken: 'xoxb-1-2-browserBot', signingSecret: SIGNING_SECRET, channel: '#approvals' })
    .expect(200);
});
afterAll(async () => {
  await worker?.stop();
  await browser?.close();
  await env?.close();
  await slack?.close();
});

function press(action: 'approve' | 'reject', approvalId: string, user: string) {
  const { body, headers } = signedInteraction(SIGNING_SECRET, buttonPress(action, approvalId, user));
  return env.http.post('/slack/interactions').set(headers).send(body).expect(200);
}

/** A pending request posted to Slack, and the link an unlinked Slack user gets for pressing its button. */
async function linkSentTo(user: string): Promise<{ approvalId: string; path: string }> {
  const { id } = (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 120 }, policyKey: 'refunds' })
      .expect(201)
  ).body;
  await eventually(() => slack.of('chat.postMessage').some((call) => JSON.stringify(call.args.blocks).includes(id)));
  const before = slack.of('chat.postEphemeral').filter((call) => call.args.user === user).length;
  await press('approve', id, user);
  const told = await eventually(() => slack.of('chat.postEphemeral').filter((call) => call.args.user === user)[before]);
  const url = /<(https?:\/\/[^|>]+\/console\/link-slack\/[A-Za-z0-9_-]+)\|/.exec(String(told.args.text))![1]!;
  return { approvalId: id, path: new URL(url).pathname };
}

describe('the Slack self-link page', () => {
  it('sends a signed-out visitor to sign in and back, shows the Slack account, links it on confirmation, and the next press decides', async () => {
    const ada = await createMember(env, org, 'reviewer', 'ada@acme.test');
    const { approvalId, path } = await linkSentTo('U0ADA');
    const context = await openContext(browser, env);
    const page = await context.newPage();
    await page.goto(path);
    await page.getByRole('heading', { name: 'Sign in to Approval Gate' }).waitFor();
    await page.getByLabel('Email').fill(ada.email);
    await page.getByLabel('Password').fill(ada.password);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await page.getByRole('heading', { name: 'Link your Slack account' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(path);
    const facts = page.locator('dl.facts');
    await expect.poll(() => facts.textContent()).toContain('U0ADA');
    expect(await facts.textContent()).toContain(SLACK_TEAM_ID);
    expect(await facts.textContent()).toContain(`${ada.email} (you)`);
    expect(await unnamedControls(page)).toEqual([]);
    await screenshot(page, 'slack-link');
    // Opening the page linked nothing.
    expect((await env.services.db.member.findUniqueOrThrow({ where: { id: ada.id } })).slackUserId).toBeNull();

    await page.getByRole('button', { name: 'Link this Slack account to me' }).click();
    await page.getByRole('status').filter({ hasText: 'Linked. Go back to Slack' }).waitFor();
    await screenshot(page, 'slack-link-done');
    expect(await env.services.db.member.findUniqueOrThrow({ where: { id: ada.id } })).toMatchObject({
      slackTeamId: SLACK_TEAM_ID,
      slackUserId: 'U0ADA',
    });

    await press('approve', approvalId, 'U0ADA');
    const decided = (await org.request('get', `/v1/approvals/${approvalId}`).expect(200)).body;
    expect(decided).toMatchObject({ status: 'approved', decidedBy: { type: 'user', id: ada.id } });

    // Opened again, the used link says so.
    await page.reload();
    await page.getByRole('alert').filter({ hasText: 'This link is used, expired or unknown' }).waitFor();
    await context.close();
  });

  it('on a phone: a signed-in member confirms; an identity another member holds and a made-up token are refused in words', async () => {
    const [bea, cy] = await Promise.all([
      createMember(env, org, 'reviewer', 'bea@acme.test'),
      createMember(env, org, 'reviewer', 'cy@acme.test'),
    ]);
    const { path } = await linkSentTo('U0BEA');
    const context = await openContext(browser, env, { width: 390, height: 844 });
    const page = await context.newPage();
    await page.goto('/console/');
    await page.getByLabel('Email').fill(bea.email);
    await page.getByLabel('Password').fill(bea.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();

    await page.goto(path);
    await page.getByRole('button', { name: 'Link this Slack account to me' }).waitFor();
    expect(await overflowsHorizontally(page)).toBe(false);
    await screenshot(page, 'slack-link-phone');
    await page.getByRole('button', { name: 'Link this Slack account to me' }).click();
    await page.getByRole('status').filter({ hasText: 'Linked.' }).waitFor();

    // A link for a Slack account an admin then links to bea: cy cannot take it.
    const { path: taken } = await linkSentTo('U0BEA-AGAIN');
    await org
      .request('patch', `/v1/members/${bea.id}`)
      .send({ slack: { teamId: SLACK_TEAM_ID, userId: 'U0BEA-AGAIN' } })
      .expect(200);
    const cyContext = await openContext(browser, env, { width: 390, height: 844 });
    const cyPage = await cyContext.newPage();
    await cyPage.goto('/console/');
    await cyPage.getByLabel('Email').fill(cy.email);
    await cyPage.getByLabel('Password').fill(cy.password);
    await cyPage.getByRole('button', { name: 'Sign in' }).click();
    await cyPage.getByRole('heading', { name: 'Inbox' }).waitFor();
    await cyPage.goto(taken);
    await cyPage.getByRole('alert').filter({ hasText: 'linked to another member of your organization' }).waitFor();
    expect(await cyPage.getByRole('button', { name: 'Link this Slack account to me' }).count()).toBe(0);

    await cyPage.goto('/console/link-slack/not-a-real-token');
    await cyPage.getByRole('alert').filter({ hasText: 'This link is used, expired or unknown' }).waitFor();
    await screenshot(cyPage, 'slack-link-expired-phone');
    expect((await env.services.db.member.findUniqueOrThrow({ where: { id: cy.id } })).slackUserId).toBeNull();
    await context.close();
    await cyContext.close();
  });

  it('keeps the token out of the logs', async () => {
    const { path } = await linkSentTo('U0LOGS');
    const token = path.split('/').pop()!;
    const context = await openContext(browser, env);
    await (await context.newPage()).goto(path);
    await context.close();
    await eventually(() => env.logs.some((line) => String(line.msg ?? '').includes('/console/link-slack/:token')));
    expect(JSON.stringify(env.logs)).not.toContain(token);
  });
});
