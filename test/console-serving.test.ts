import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ CONSOLE_DIR: inject('consoleDir') });
});
afterAll(() => env?.close());

function expectConsoleHeaders(response: { headers: Record<string, string> }) {
  expect(response.headers['content-security-policy']).toMatch(/^default-src 'self';/);
  expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
}

describe('the console at /console', () => {
  it('serves the app for /console and for every client route, with its CSP and not cached', async () => {
    const app = await env.http.get('/console').expect(200);
    expect(app.headers['content-type']).toMatch(/^text\/html/);
    expect(app.headers['cache-control']).toBe('no-cache');
    expectConsoleHeaders(app);
    for (const route of [
      '/console/',
      '/console/approvals/3b1f6f0e-8f4c-4c43-9a55-6a8f0e1f2b3c',
      '/console/invite/some-token',
      '/console/policies/a%20key',
    ]) {
      const response = await env.http.get(route).expect(200);
      expect(response.text, route).toBe(app.text);
      expectConsoleHeaders(response);
    }
  });

  it('loads nothing from another origin: every script and stylesheet is a hashed asset under /console/assets, cached for good', async () => {
    const { text } = await env.http.get('/console/').expect(200);
    const urls = [...text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    for (const url of urls) expect(url, url).toMatch(/^\/console\//);
    const asset = urls.find((url) => url.startsWith('/console/assets/') && url.endsWith('.js'))!;
    const response = await env.http.get(asset).expect(200);
    expect(response.headers['content-type']).toMatch(/javascript/);
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectConsoleHeaders(response);
  });

  it('answers 404 problem+json for a missing asset and for paths the file server refuses, never the app or a 5xx', async () => {
    for (const route of [
      '/console/assets/missing-1234.js',
      '/console/assets/%2e%2e%2findex.html',
      '/console/assets/%00',
      '/console/assets/',
    ]) {
      const response = await env.http.get(route);
      expect(response.status, route).toBe(404);
      expect(response.headers['content-type'], route).toMatch(/^application\/problem\+json/);
      expect(response.body.code, route).toBe('not_found');
    }
  });

  it('says how to build the console when its directory holds no build', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'no-console-'));
    const bare = await createTestEnv({ CONSOLE_DIR: empty });
    try {
      const response = await bare.http.get('/console/').expect(404);
      expect(response.body.detail).toContain('npm run build');
      expect(await readdir(empty)).toEqual([]);
    } finally {
      await bare.close();
      await rm(empty, { recursive: true });
    }
  });
});
