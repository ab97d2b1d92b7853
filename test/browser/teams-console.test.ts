import { randomBytes, X509Certificate } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, screenshot, signIn, unnamedControls } from '../support/browser.js';
import {
  APP_ID,
  APP_SECRET,
  CHANNEL_ID,
  makeCertificate,
  TEAM_ID,
  TENANT_ID,
  startBotFramework,
  type BotFramework,
} from '../support/bot-framework.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let bot: BotFramework;
let env: TestEnv;
let browser: Browser;
let org: TestOrg;
let carol: TestMember;
let bob: TestMember;

beforeAll(async () => {
  bot = await startBotFramework();
  [env, browser] = await Promise.all([
    createTestEnv({
      CONSOLE_DIR: inject('consoleDir'),
      TEAMS_LOGIN_URL: bot.url,
      TEAMS_SERVICE_URL: bot.serviceUrl,
      TEAMS_OPENID_METADATA_URL: bot.openIdMetadataUrl,
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    }),
    launchBrowser(),
  ]);
  org = await env.createOrg();
  [carol, bob] = await Promise.all([
    createMember(env, org, 'admin', 'carol@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
  await bot?.close();
});

describe('connecting Microsoft Teams in the console', () => {
  it('lets an admin connect the bot, checked with Entra, the secret never shown again, and disconnect it', async () => {
    const { context, page } = await signIn(browser, env, carol);
    await page.getByRole('link', { name: 'Integrations' }).click();
    const form = page.getByRole('form', { name: 'Connect Microsoft Teams' });
    await form.waitFor();
    expect(await unnamedControls(page)).toEqual([]);
    await page.getByLabel('Microsoft App ID').fill(APP_ID);
    await page.getByLabel('Client secret', { exact: true }).fill('not-the-secret');
    await page.getByLabel('Tenant ID').fill(TENANT_ID);
    await page.getByLabel('Team ID').fill(TEAM_ID);
    await page.getByLabel('Channel ID').fill(CHANNEL_ID);
    await page.getByRole('button', { name: 'Connect and check' }).click();
    // Entra refuses the secret: said so, naming the field, and nothing is stored.
    await page
      .getByRole('alert')
      .getByText(/appSecret: .*Entra refused/)
      .waitFor();
    expect(await env.services.db.teamsIntegration.findUnique({ where: { orgId: org.orgId } })).toBeNull();

    await page.getByLabel('Client secret', { exact: true }).fill(APP_SECRET);
    await screenshot(page, 'teams-connect');
    await page.getByRole('button', { name: 'Connect and check' }).click();
    await page.getByRole('button', { name: 'Replace credentials…' }).waitFor();
    const facts = await page.locator('dl.facts').innerText();
    for (const value of [APP_ID, TENANT_ID, TEAM_ID, CHANNEL_ID]) expect(facts).toContain(value);
    expect(await page.content()).not.toContain(APP_SECRET);
    const stored = await env.services.db.teamsIntegration.findUniqueOrThrow({ where: { orgId: org.orgId } });
    expect(stored.appSecret).not.toContain(APP_SECRET);
    await screenshot(page, 'teams-connected');

    await page.getByRole('button', { name: 'Disconnect…' }).click();
    await page.getByRole('button', { name: 'Disconnect Teams' }).click();
    await form.waitFor();
    expect(await env.services.db.teamsIntegration.findUnique({ where: { orgId: org.orgId } })).toBeNull();
    await context.close();
  });

  it('connects with a certificate instead, and shows it by thumbprint and expiry, never its key', async () => {
    const credential = makeCertificate({ from: new Date(Date.now() - 86_400_000), until: new Date(Date.now() + 30 * 86_400_000) });
    bot.registerCertificate(credential.certificate);
    const { context, page } = await signIn(browser, env, carol);
    await page.goto('/console/integrations');
    await page.getByRole('form', { name: 'Connect Microsoft Teams' }).waitFor();
    await page.getByLabel('a certificate', { exact: true }).check();
    expect(await page.getByLabel('Client secret', { exact: true }).count()).toBe(0);
    await page.getByLabel('Microsoft App ID').fill(APP_ID);
    await page.getByLabel('Tenant ID').fill(TENANT_ID);
    await page.getByLabel('Team ID').fill(TEAM_ID);
    await page.getByLabel('Channel ID').fill(CHANNEL_ID);
    await page.getByLabel('Certificate (PEM)').fill(credential.certificate);
    await page.getByLabel(/^Private key/).fill(credential.privateKey);
    await page.getByRole('button', { name: 'Connect and check' }).click();
    await page.getByRole('button', { name: 'Replace credentials…' }).waitFor();
    const thumbprint = new X509Certificate(credential.certificate).fingerprint256.replaceAll(':', '');
    expect(await page.locator('dl.facts').innerText()).toContain(thumbprint);
    expect(await page.content()).not.toContain(credential.privateKey.split('\n')[1]);
    await screenshot(page, 'teams-connected-certificate');
    await env.services.db.teamsIntegration.delete({ where: { orgId: org.orgId } });
    await context.close();
  });

  it('shows a reviewer neither the section nor the form, and the API refuses their session', async () => {
    const { context, page } = await signIn(browser, env, bob);
    expect(await page.getByRole('link', { name: 'Integrations' }).count()).toBe(0);
    await page.goto('/console/integrations');
    await page.getByText('Only an admin connects integrations.').waitFor();
    expect(await page.getByRole('form', { name: 'Connect Microsoft Teams' }).count()).toBe(0);
    // Trying anyway, with the session and its CSRF token, as the console would send it.
    const refused = await bob
      .request('put', '/v1/integrations/teams')
      .send({ appId: APP_ID, appSecret: APP_SECRET, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID });
    expect(refused.status).toBe(403);
    expect(await env.services.db.teamsIntegration.findUnique({ where: { orgId: org.orgId } })).toBeNull();
    await context.close();
  });
});
