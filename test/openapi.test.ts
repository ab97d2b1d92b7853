import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;

// With METRICS_TOKEN and a built console, so that /metrics and the console's routes are mounted and must be described too.
beforeAll(async () => {
  env = await createTestEnv({ METRICS_TOKEN: 'metrics-token-for-openapi-test', CONSOLE_DIR: inject('consoleDir') });
});
afterAll(() => env?.close());

interface MountedRoute {
  method: string;
  path: string;
}

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  rawPath?: string;
  slash?: boolean;
}

/**
 * Every route+method the Express app answers, read from its router stack: routes mounted directly
 * and in routers mounted with `app.use` (decision links, the console). Catch-all `router.all`
 * handlers (the 405s) answer only methods no operation has, so they are not operations.
 */
function mountedRoutes(stack: Layer[], prefix = ''): MountedRoute[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      return Object.keys(layer.route.methods)
        .filter((method) => method !== '_all')
        .map((method) => ({ method, path: `${prefix}${layer.route!.path}` }));
    }
    if (layer.handle?.stack) return mountedRoutes(layer.handle.stack, layer.slash ? prefix : `${prefix}${layer.rawPath ?? ''}`);
    return [];
  });
}

/** Express path syntax to an OpenAPI path template: `:id` and the wildcard `{*rest}` both become `{name}`. */
const toTemplate = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\{\*([A-Za-z0-9_]+)\}/g, '{$1}');

describe('the OpenAPI document', () => {
  it('passes a maintained OpenAPI 3.1 validator', async () => {
    const document = (await env.http.get('/openapi.json').expect(200)).body;
    const result = await validate(structuredClone(document));
    expect(result.valid ? 'valid' : compileErrors(result)).toBe('valid');
    expect(result.warnings).toEqual([]);
  });

  it('describes every route and method the app serves', async () => {
    const document = (await env.http.get('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const routes = mountedRoutes((env.app as unknown as { router: { stack: Layer[] } }).router.stack);
    // A sanity check of the walk itself: operational, HTML and API routes are all found.
    expect(routes).toEqual(
      expect.arrayContaining([
        { method: 'get', path: '/healthz' },
        { method: 'get', path: '/metrics' },
        { method: 'post', path: '/d/:token' },
        { method: 'post', path: '/slack/interactions' },
        { method: 'get', path: '/console/{*clientRoute}' },
        { method: 'post', path: '/v1/approvals/:id/decision' },
      ]),
    );
    const undocumented = routes
      .filter(({ method, path }) => !document.paths[toTemplate(path)]?.[method])
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(undocumented).toEqual([]);

    const documented = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));
    const served = new Set(routes.map(({ method, path }) => `${method} ${toTemplate(path)}`));
    expect(documented.filter((operation) => !served.has(operation))).toEqual([]);
  });

  it('describes the CSV answers of the audit page and of a bulk export download', async () => {
    const { paths } = (await env.http.get('/openapi.json').expect(200)).body;
    const page = paths['/v1/audit'].get.responses['200'].content;
    expect(Object.keys(page)).toEqual(['application/json', 'text/csv']);
    expect(page['text/csv'].example).toMatch(/^seq,createdAt,type,actor,data,prevHash,hash\n/);
    const download = paths['/v1/audit/exports/{id}/download'].get.responses['200'].content;
    expect(Object.keys(download)).toEqual(['text/csv']);
  });

  it('marks a body optional where every field is, and required where one is', async () => {
    const { paths } = (await env.http.get('/openapi.json').expect(200)).body;
    expect(paths['/v1/audit/exports'].post.requestBody.required).toBe(false);
    expect(paths['/v1/approvals'].post.requestBody.required).toBe(true);
  });
});
