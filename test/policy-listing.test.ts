import { describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

/** Every page of GET /v1/policies with `query`, following nextCursor to the end. */
async function allPages(query: Record<string, string>, client = org): Promise<{ keys: string[][]; pages: number }> {
  const keys: string[][] = [];
  let cursor: string | null = null;
  do {
    const res = await client
      .request('get', '/v1/policies')
      .query({ ...query, ...(cursor ? { cursor } : {}) })
      .expect(200);
    const body = res.body as { policies: { key: string }[]; nextCursor: string | null };
    keys.push(body.policies.map((policy) => policy.key));
    cursor = body.nextCursor;
  } while (cursor !== null);
  return { keys, pages: keys.length };
}

describe('GET /v1/policies pages like the approval listing', () => {
  it('gives 50 policies by key by default, with nextCursor to the next page and null on the last', async () => {
    const keys = Array.from({ length: 123 }, (_, i) => `k-${String(i).padStart(3, '0')}`);
    for (let start = 0; start < keys.length; start += 25) {
      await Promise.all(keys.slice(start, start + 25).map((key) => org.request('put', `/v1/policies/${key}`).send({}).expect(200)));
    }
    const first = await org.request('get', '/v1/policies').expect(200);
    expect(first.body.policies).toHaveLength(50);
    expect(typeof first.body.nextCursor).toBe('string');

    const byDefault = await allPages({});
    expect(byDefault.keys.map((page) => page.length)).toEqual([50, 50, 23]);
    expect(byDefault.keys.flat()).toEqual(keys);

    const small = await allPages({ limit: '7' });
    expect(small.pages).toBe(18);
    expect(small.keys.flat()).toEqual(keys);

    const big = await org.request('get', '/v1/policies').query({ limit: '200' }).expect(200);
    expect(big.body.policies).toHaveLength(123);
    expect(big.body.nextCursor).toBeNull();

    // A page boundary exactly at the end still ends with null.
    const exact = await allPages({ limit: '41' });
    expect(exact.keys.map((page) => page.length)).toEqual([41, 41, 41]);

    // Another organization's policies are not paged in.
    const other = await env.createOrg();
    await other.request('put', '/v1/policies/k-050x').send({}).expect(200);
    expect((await allPages({ limit: '200' })).keys.flat()).not.toContain('k-050x');
  });

  it('is stable while policies are created between pages', async () => {
    const other = await env.createOrg();
    for (const key of ['b', 'd', 'f']) await other.request('put', `/v1/policies/${key}`).send({}).expect(200);
    const first = await other.request('get', '/v1/policies').query({ limit: '2' }).expect(200);
    expect(first.body.policies.map((p: { key: string }) => p.key)).toEqual(['b', 'd']);
    await other.request('put', '/v1/policies/a').send({}).expect(200);
    await other.request('put', '/v1/policies/e').send({}).expect(200);
    const second = await other.request('get', '/v1/policies').query({ limit: '2', cursor: first.body.nextCursor }).expect(200);
    expect(second.body.policies.map((p: { key: string }) => p.key)).toEqual(['e', 'f']);
  });

  it.each([
    [{ limit: '0' }, 'limit'],
    [{ limit: '201' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ limit: '1.5' }, 'limit'],
    [{ cursor: 'not-a-cursor' }, 'cursor'],
    [{ cursor: Buffer.from('a.b', 'utf8').toString('base64url') }, 'cursor'],
    [{ cursor: '' }, 'cursor'],
    [{ status: 'pending' }, 'status'],
  ])('refuses %j with 422 naming %s', async (query, path) => {
    const res = await org.request('get', '/v1/policies').query(query).expect(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((error: { path: string }) => error.path)).toContain(path);
  });
});
