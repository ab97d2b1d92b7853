import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { signDelivery, WEBHOOK_USER_AGENT } from '../src/modules/webhooks/webhook-signing.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

/** What the guide states about the service, checked against the service itself. */

const read = (file: string) => readFileSync(file, 'utf8');

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

describe('docs/api.md', () => {
  it('lists exactly the scopes there are', () => {
    const paragraph = /\*\*Scopes\.\*\* Each operation needs one: ([^.]+)\. A key without it/s.exec(read('docs/api.md'))![1]!;
    const listed = [...paragraph.matchAll(/`([a-z]+:[a-z]+)`/g)].map((match) => match[1]);
    expect(listed.sort()).toEqual([...SCOPES].sort());
  });

  it('shows the allow header a method that a path does not answer gets', async () => {
    const shown = /curl -s -i -X DELETE \$AG\/v1\/approvals[^\n]*\n# HTTP\/1\.1 405[^\n]*\n# allow: ([^\n]+)\n/.exec(
      read('docs/api.md'),
    )![1];
    const res = await org.request('delete', '/v1/approvals').expect(405);
    expect(res.headers.allow).toBe(shown);
  });

  it('says in which order a payload’s keys come back, as they do', async () => {
    expect(read('docs/api.md')).toContain("its keys in PostgreSQL's `jsonb` order (shorter keys first, then bytewise)");
    const res = await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', policyKey: 'none', payload: { zeta: 1, beta: 2, a: 3, alpha: 4 } })
      .expect(201);
    // The creation's answer echoes what was sent; what is read back comes from the database.
    const stored = await org.request('get', `/v1/approvals/${res.body.id}`).expect(200);
    expect(Object.keys(stored.body.payload)).toEqual(['a', 'beta', 'zeta', 'alpha']);
  });
});

describe('docs/webhooks.md', () => {
  it('names the user-agent deliveries carry', () => {
    expect(read('docs/webhooks.md')).toContain(`a \`user-agent\` of \`${WEBHOOK_USER_AGENT}\``);
  });

  it('says webhook-id is the event id and x-service-webhook-id the delivery id, as signed', () => {
    const text = read('docs/webhooks.md');
    expect(text).toMatch(/\| `webhook-id` +\| the event id \(the body's `id`\)/);
    expect(text).toMatch(/\| `x-service-webhook-id` +\| the delivery id/);
    const headers = signDelivery({
      secrets: ['whsec_MDEyMzQ1Njc4OWFiY2RlZg=='],
      eventId: 'event-1',
      deliveryId: 'delivery-1',
      rawBody: '{}',
    });
    expect(headers['webhook-id']).toBe('event-1');
    expect(headers['x-service-webhook-id']).toBe('delivery-1');
  });
});

describe('docs/policies.md', () => {
  it('leads with a policy whose rules evaluate without error on a payload that lacks a field they read', async () => {
    const lead = /```sh\ncurl -s -X PUT \$AG\/v1\/policies\/refunds [^\n]*-d '(\{[\s\S]*?\})'/.exec(read('docs/policies.md'))![1]!;
    const policy = JSON.parse(lead) as { rules: unknown[] };
    const res = await org
      .request('post', '/v1/policies/refunds/evaluate')
      .send({ action: 'refund', payload: { amount: 250 }, policy })
      .expect(200);
    expect(res.body).toEqual({ outcome: 'review', matchedRule: null, error: null });
  });
});
