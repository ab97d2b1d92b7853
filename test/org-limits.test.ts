import { describe, expect, it } from 'vitest';
import { ORG_LIMITS } from '../src/modules/orgs/org-limits.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

const HOOK_URL = 'https://203.0.113.10/hooks';

/** Sends `count` requests `batch` at a time and returns their statuses. */
async function inBatches(count: number, batch: number, send: (index: number) => Promise<{ status: number }>): Promise<number[]> {
  const statuses: number[] = [];
  for (let start = 0; start < count; start += batch) {
    const answers = await Promise.all(Array.from({ length: Math.min(batch, count - start) }, (_, i) => send(start + i)));
    statuses.push(...answers.map((answer) => answer.status));
  }
  return statuses;
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((n, s) => ({ ...n, [s]: (n[s] ?? 0) + 1 }), {});

describe('limits per organization', () => {
  it('stores at most 1,000 policies, even when many creations race at the limit; replacing one still works there', async () => {
    expect(ORG_LIMITS.policies).toBe(1000);
    const below = ORG_LIMITS.policies - 5;
    expect(await inBatches(below, 10, (i) => org.request('put', `/v1/policies/p-${i}`).send({}))).toEqual(Array(below).fill(200));

    const racing = await inBatches(20, 20, (i) => org.request('put', `/v1/policies/race-${i}`).send({}));
    expect(tally(racing)).toEqual({ 200: 5, 409: 15 });
    const [counted] = await env.services.sql.query<{ n: string }>(null, 'SELECT count(*) AS n FROM policies WHERE org_id = $1', [
      org.orgId,
    ]);
    expect(Number(counted!.n)).toBe(ORG_LIMITS.policies);

    const refused = await org.request('put', '/v1/policies/one-more').send({}).expect(409);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 409, code: 'limit_reached', limit: { name: 'policies', max: 1000 } });
    expect(refused.body.detail).toContain('1,000 policies');
    // Replacing an existing policy at the limit is not a creation.
    await org.request('put', '/v1/policies/p-0').send({ defaultOutcome: 'allow' }).expect(200);
    // Another organization has its own count.
    const other = await env.createOrg();
    await other.request('put', '/v1/policies/fresh').send({}).expect(200);
    // Deleting one makes room for one.
    await org.request('delete', '/v1/policies/p-1').expect(204);
    await org.request('put', '/v1/policies/one-more').send({}).expect(200);
    await org.request('put', '/v1/policies/two-more').send({}).expect(409);
  }, 120_000);

  it('keeps at most 100 webhook endpoints, even when many creations race at the limit', async () => {
    const fresh = await env.createOrg();
    const create = () => fresh.request('post', '/v1/webhooks').send({ url: HOOK_URL, events: ['approval.approved'] });
    const below = ORG_LIMITS.webhookEndpoints - 3;
    expect(await inBatches(below, 25, create)).toEqual(Array(below).fill(201));

    const racing = await inBatches(20, 20, create);
    expect(tally(racing)).toEqual({ 201: 3, 409: 17 });
    const listed = await fresh.request('get', '/v1/webhooks').expect(200);
    expect(listed.body.endpoints).toHaveLength(ORG_LIMITS.webhookEndpoints);

    const refused = await create().expect(409);
    expect(refused.body).toMatchObject({ code: 'limit_reached', limit: { name: 'webhookEndpoints', max: 100 } });
    expect(refused.body.detail).toContain('100 webhook endpoints');
  }, 60_000);
});
