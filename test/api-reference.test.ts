import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, openContext, screenshot, PAGE_LOAD_TIMEOUT_MS } from './support/browser.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ CONSOLE_DIR: inject('consoleDir') });
});
afterAll(() => env?.close());

const cspOf = (header: string | undefined) =>
  Object.fromEntries(
    (header ?? '')
      .split(';')
      .map((directive) => directive.trim().split(/\s+/) as [string, ...string[]])
      .map(([name, ...values]) => [name, values]),
  );

describe('GET /docs', () => {
  it('serves the reference page, which loads its scripts and styles from this origin and reads /openapi.json', async () => {
    const res = await env.http.get('/docs').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<script src="/docs/swagger-ui-bundle.js"></script>');
    expect(res.text).toContain('<script src="/docs/api-reference.js"></script>');
    expect(res.text).toContain('<link rel="stylesheet" href="/docs/swagger-ui.css" />');
    expect(res.text).not.toMatch(/https?:\/\//);
    expect(res.text).not.toMatch(/<script>|<style>|style=/);

    const starter = await env.http.get('/docs/api-reference.js').expect(200);
    expect(starter.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(starter.text).toContain("url: '/openapi.json'");
    // Without it Swagger UI sends the document to a validator on another site.
    expect(starter.text).toContain('validatorUrl: null');
  });

  it("serves Swagger UI's bundle and styles from node_modules, cached for an hour", async () => {
    const bundle = await env.http.get('/docs/swagger-ui-bundle.js').expect(200);
    expect(bundle.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(Number(bundle.headers['content-length'])).toBeGreaterThan(500_000);
    expect(bundle.headers['cache-control']).toBe('public, max-age=3600');
    const styles = await env.http.get('/docs/swagger-ui.css').expect(200);
    expect(styles.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(styles.headers['cache-control']).toBe('public, max-age=3600');
  });

  it("keeps scripts, styles and connections on this origin, with no inline script or style; the console's policy is unchanged", async () => {
    const csp = cspOf((await env.http.get('/docs').expect(200)).headers['content-security-policy']);
    expect(csp).toMatchObject({
      'default-src': ["'self'"],
      'script-src': ["'self'"],
      'style-src': ["'self'"],
      'connect-src': ["'self'"],
      'frame-ancestors': ["'none'"],
    });
    const consoleCsp = (await env.http.get('/console/').expect(200)).headers['content-security-policy'];
    expect(consoleCsp).toBe("default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'");
    expect((await env.http.get('/openapi.json').expect(200)).headers['content-security-policy']).toBeUndefined();
  });
});

describe('the reference page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(() => browser?.close());

  it('renders the operations of the document, with nothing from another origin and no CSP violation', async () => {
    const context = await openContext(browser, env);
    const page = await context.newPage();
    const elsewhere: string[] = [];
    const violations: string[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.protocol.startsWith('http') && url.origin !== env.baseUrl) elsewhere.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
    });

    await page.goto('/docs');
    // Swagger UI renders the operations once its bundle (megabytes) has run: a page load, not a step.
    await page.getByText('Create an approval request; the policy is evaluated at once').first().waitFor({ timeout: PAGE_LOAD_TIMEOUT_MS });
    await page.getByText('Approve, reject or request changes of a pending approval').first().waitFor();
    expect(await page.title()).toBe('Approval Gate API reference');
    // The whole document is long: the first screen shows what the page is.
    await screenshot(page, 'api-reference', { fullPage: false });

    expect(elsewhere).toEqual([]);
    expect(violations).toEqual([]);
    await context.close();
  }, 120_000);
});
