import webpush from 'web-push';
import type { Browser, Worker } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, overflowsHorizontally, screenshot, signIn } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

const PHONE = { width: 390, height: 844 };
const vapid = webpush.generateVAPIDKeys();
let env: TestEnv;
let browser: Browser;
let org: TestOrg;
let alice: TestMember;

beforeAll(async () => {
  [env, browser] = await Promise.all([
    createTestEnv({ CONSOLE_DIR: inject('consoleDir'), VAPID_PUBLIC_KEY: vapid.publicKey, VAPID_PRIVATE_KEY: vapid.privateKey }),
    launchBrowser(),
  ]);
  org = await env.createOrg();
  alice = await createMember(env, org, 'reviewer', 'alice@acme.test');
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

describe('the console on a phone', () => {
  it('is an installable web app: a manifest with its icons, served from the console', async () => {
    const manifest = await env.http.get('/console/manifest.webmanifest').expect(200);
    expect(manifest.headers['content-type']).toMatch(/^application\/manifest\+json/);
    const body = JSON.parse(manifest.text) as {
      start_url: string;
      scope: string;
      display: string;
      icons: { src: string; sizes: string }[];
    };
    expect(body).toMatchObject({ start_url: '/console/', scope: '/console/', display: 'standalone' });
    expect(body.icons.map((icon) => icon.sizes)).toEqual(['192x192', '512x512', '512x512']);
    for (const icon of body.icons) {
      const image = await env.http.get(icon.src).expect(200);
      expect(image.headers['content-type']).toBe('image/png');
    }
    const page = await env.http.get('/console/').expect(200);
    expect(page.text).toContain('<link rel="manifest" href="/console/manifest.webmanifest" />');
  });

  it('shows a pushed request as a notification whose click opens the request in the signed-in console, at 390 px', async () => {
    const { context, page } = await signIn(browser, env, alice, PHONE);
    await context.grantPermissions(['notifications'], { origin: env.baseUrl });
    const worker: Worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    expect(new URL(worker.url()).pathname).toBe('/console/sw.js');
    await page.waitForFunction('navigator.serviceWorker.controller !== null');

    await page.goto('/console/settings');
    await page.getByRole('heading', { name: 'Notifications on this device' }).waitFor();
    await page.getByLabel('Notify me on this device when a request waits for my decision').waitFor();
    expect(await overflowsHorizontally(page)).toBe(false);
    await screenshot(page, 'phone-settings', { fullPage: false });

    const approval = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: 'refund', payload: { amount: 250 }, policyKey: 'refunds', agent: 'billing-bot' })
        .expect(201)
    ).body as { id: string };
    const message = {
      title: 'Approval needed: refund',
      body: 'Agent: billing-bot · Policy: refunds',
      url: `${env.config.PUBLIC_URL}/console/approvals/${approval.id}`,
      tag: `approval-${approval.id}`,
    };
    // The push as the browser's push service hands it to the worker (decrypted), and the notification it shows.
    // Strings evaluated in the worker: this file is compiled without the DOM's types.
    const shown = await worker.evaluate(`(async () => {
      const data = ${JSON.stringify(message)};
      self.dispatchEvent(new PushEvent('push', { data: JSON.stringify(data) }));
      for (let i = 0; i < 100; i++) {
        const [notification] = await self.registration.getNotifications({ tag: data.tag });
        if (notification) return { title: notification.title, body: notification.body, data: notification.data };
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return null;
    })()`);
    expect(shown).toEqual({ title: message.title, body: message.body, data: { url: message.url } });

    // A push naming a page elsewhere shows nothing.
    const foreign = await worker.evaluate(`(async () => {
      self.dispatchEvent(new PushEvent('push', { data: JSON.stringify({ title: 'x', url: 'https://evil.example/', tag: 'evil' }) }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      return (await self.registration.getNotifications({ tag: 'evil' })).length;
    })()`);
    expect(foreign).toBe(0);

    await worker.evaluate(`(async () => {
      const [notification] = await self.registration.getNotifications({ tag: ${JSON.stringify(message.tag)} });
      self.dispatchEvent(new NotificationEvent('notificationclick', { notification }));
    })()`);
    await eventually(() => new URL(page.url()).pathname === `/console/approvals/${approval.id}`);
    await page.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    expect(await overflowsHorizontally(page)).toBe(false);
    await screenshot(page, 'phone-approval', { fullPage: false });
    // The notification only opened the request: it is still waiting for a decision made here.
    expect((await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body.status).toBe('pending');
    await context.close();
  });
});
