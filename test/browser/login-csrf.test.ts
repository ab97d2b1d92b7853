import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, openContext } from '../support/browser.js';
import { listenOnLoopback } from '../support/listen.js';
import { createMember, inviteToken } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let browser: Browser;
let attackerSite: Server;
let attackerOrigin: string;
/** The page the attacker's site serves next: a form that submits itself to the gate. */
let attackerPage = '';

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv({ CONSOLE_DIR: inject('consoleDir') }), launchBrowser()]);
  org = await env.createOrg();
  attackerSite = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(attackerPage));
  attackerOrigin = `http://127.0.0.1:${await listenOnLoopback(attackerSite)}`;
});
afterAll(async () => {
  await browser?.close();
  attackerSite?.closeAllConnections();
  await new Promise((resolve) => attackerSite?.close(resolve));
  await env?.close();
});

/**
 * A form of enctype text/plain posts `name=value`. Cut at the `=` its last value ends with, the
 * JSON of `fields` is such a pair: the body is exactly that JSON, which the schema accepts.
 */
function selfSubmittingForm(action: string, fields: Record<string, string>): string {
  const json = JSON.stringify(fields);
  const cut = json.lastIndexOf('=');
  if (cut !== json.length - 3) throw new Error('the last field must end with "="');
  const attribute = (text: string) => text.replaceAll('&', '&amp;').replaceAll("'", '&#39;');
  return `<!doctype html><title>You won</title>
<form method="POST" action="${action}" enctype="text/plain"><input type="hidden" name='${attribute(json.slice(0, cut))}' value='${attribute(json.slice(cut + 1))}'></form>
<script>document.forms[0].submit()</script>`;
}

/** Opens the attacker's page in a fresh browser and returns the gate's answer to the form and the gate's cookies afterwards. */
async function visitAttackerPage(path: string, fields: Record<string, string>) {
  attackerPage = selfSubmittingForm(`${env.baseUrl}${path}`, fields);
  const context = await openContext(browser, env);
  try {
    const page = await context.newPage();
    const answer = page.waitForResponse((response) => response.url() === `${env.baseUrl}${path}`);
    await page.goto(`${attackerOrigin}/`);
    const response = await answer;
    return { status: response.status(), body: await response.json(), cookies: await context.cookies(env.baseUrl) };
  } finally {
    await context.close();
  }
}

describe('login CSRF in Chromium', () => {
  it('a page of another origin auto-submitting a text/plain form to /v1/session is refused, and no session cookie is set', async () => {
    // The attacker's own account, with a password that ends the form's JSON.
    const invited = await org.request('post', '/v1/members').send({ email: 'attacker@acme.test', role: 'viewer' }).expect(201);
    const password = 'attacker password=';
    await env.http
      .post('/v1/invites/accept')
      .send({ token: inviteToken(invited.body.inviteUrl), password })
      .expect(200);
    const visit = await visitAttackerPage('/v1/session', { email: 'attacker@acme.test', password });
    expect(visit.status).toBe(403);
    expect(visit.body).toMatchObject({ code: 'csrf_failed' });
    expect(visit.cookies.map((cookie) => cookie.name)).not.toContain('ag_session');
  });

  it('the same form to /v1/invites/accept is refused, and the invite is still unused', async () => {
    const invited = await org.request('post', '/v1/members').send({ email: 'attacker-invite@acme.test', role: 'viewer' }).expect(201);
    const token = inviteToken(invited.body.inviteUrl);
    const visit = await visitAttackerPage('/v1/invites/accept', { token, password: 'chosen by the attacker=' });
    expect(visit.status).toBe(403);
    expect(visit.body).toMatchObject({ code: 'csrf_failed' });
    expect(visit.cookies.map((cookie) => cookie.name)).not.toContain('ag_session');
    await env.http.post('/v1/invites/accept').send({ token, password: 'chosen by the member' }).expect(200);
  });

  it('the console’s own sign-in, from PUBLIC_URL, still works', async () => {
    const member = await createMember(env, org, 'viewer');
    const context = await openContext(browser, env);
    try {
      const page = await context.newPage();
      const answer = page.waitForResponse(
        (response) => response.url() === `${env.baseUrl}/v1/session` && response.request().method() === 'POST',
      );
      await page.goto('/console/');
      await page.getByLabel('Email').fill(member.email);
      await page.getByLabel('Password').fill(member.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      expect((await answer).status()).toBe(200);
      expect((await context.cookies(env.baseUrl)).map((cookie) => cookie.name)).toContain('ag_session');
    } finally {
      await context.close();
    }
  });
});
