import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { WebhookEventBody } from '../src/modules/audit/audit-events.js';
import { verifyWebhook, WebhookVerificationError, type VerifyWebhookInput } from '../src/modules/webhooks/verify-webhook.js';
import { signDelivery, WEBHOOK_USER_AGENT } from '../src/modules/webhooks/webhook-signing.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

const event: WebhookEventBody = {
  id: '0b8f8a4e-5b7e-4c59-9d43-0c1b3f3f6a11',
  type: 'approval.approved',
  createdAt: '2026-01-02T03:04:05.678Z',
  data: {
    approvalId: '7d1f2b8a-2f7c-4a53-8e77-1c8f0f0d2b90',
    status: 'approved',
    verdict: 'approved',
    action: 'päy "€" \n',
    payload: { amount: 12.5, tags: ['ü', null] },
    feedback: 'ok 👍',
    agent: 'billing-bot',
    policyKey: 'refunds',
    payloadHash: 'a'.repeat(64),
    decidedBy: { type: 'api_key', id: '3f7e1a2b-9c44-4f0e-8d7c-5c0a4a8e3c55' },
  },
};
const rawBody = JSON.stringify(event);
const deliveryId = '5c0a4a8e-3c55-4f0e-8d7c-3f7e1a2b9c44';

function sign(secrets: string[], timestamp = nowSeconds(), body: string = rawBody) {
  return signDelivery({ secrets, eventId: event.id, deliveryId, timestamp, rawBody: body });
}

/** Runs verifyWebhook and returns the error it throws. */
function rejection(input: VerifyWebhookInput): WebhookVerificationError {
  try {
    verifyWebhook(input);
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('verifyWebhook accepted the delivery');
}

describe('signDelivery', () => {
  it('produces every header of one attempt', () => {
    const secret = newSecret();
    const headers = sign([secret], 1_767_323_045);
    expect(headers).toEqual({
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'x-service-signature': expect.stringMatching(/^v1=[0-9a-f]{64}$/),
      'x-service-timestamp': '1767323045',
      'x-service-webhook-id': deliveryId,
      'webhook-id': event.id,
      'webhook-timestamp': '1767323045',
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    });
    expect(WEBHOOK_USER_AGENT).toMatch(/^ApprovalGate-Webhooks\/1\.0 \(\+.+\)$/);
  });

  it('matches an independent node:crypto computation of both schemes', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const headers = sign([secret], timestamp);
    const ours = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${rawBody}`, 'utf8').digest('hex');
    expect(headers['x-service-signature']).toBe(`v1=${ours}`);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(key).toHaveLength(32);
    const standard = createHmac('sha256', key).update(`${event.id}.${timestamp}.${rawBody}`, 'utf8').digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${standard}`);
  });

  it('signs the same bytes whether the body is a string or a Buffer', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const fromBuffer = signDelivery({ secrets: [secret], eventId: event.id, deliveryId, timestamp, rawBody: Buffer.from(rawBody) });
    expect(fromBuffer).toEqual(sign([secret], timestamp));
  });

  it('verifies with Stripe, Standard Webhooks and our own helper', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const headers = sign([secret], timestamp);
    const hex = headers['x-service-signature'].slice('v1='.length);

    const stripeEvent = Stripe.webhooks.constructEvent(rawBody, `t=${timestamp},v1=${hex}`, secret, 300);
    expect(stripeEvent).toEqual(event);
    expect(new Webhook(secret).verify(rawBody, headers)).toEqual(event);
    expect(verifyWebhook({ rawBody, headers, secret })).toEqual(event);
    expect(verifyWebhook({ rawBody: Buffer.from(rawBody), headers, secret })).toEqual(event);
  });

  it('carries both signatures during a rotation, and either secret verifies', () => {
    const [current, previous, stranger] = [newSecret(), newSecret(), newSecret()];
    const timestamp = nowSeconds();
    const headers = sign([current, previous], timestamp);
    const [newHex, oldHex] = headers['x-service-signature'].split(' ').map((part) => part.slice('v1='.length));
    expect(headers['x-service-signature']).toMatch(/^v1=[0-9a-f]{64} v1=[0-9a-f]{64}$/);
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(headers).toMatchObject({ 'x-service-signature': sign([current], timestamp)['x-service-signature'] + ` v1=${oldHex}` });
    expect(sign([previous], timestamp)['x-service-signature']).toBe(`v1=${oldHex}`);

    const stripeHeader = `t=${timestamp},v1=${newHex},v1=${oldHex}`;
    for (const secret of [current, previous]) {
      expect(Stripe.webhooks.constructEvent(rawBody, stripeHeader, secret, 300)).toEqual(event);
      expect(new Webhook(secret).verify(rawBody, headers)).toEqual(event);
      expect(verifyWebhook({ rawBody, headers, secret })).toEqual(event);
    }
    expect(() => Stripe.webhooks.constructEvent(rawBody, stripeHeader, stranger, 300)).toThrow();
    expect(() => new Webhook(stranger).verify(rawBody, headers)).toThrow(/No matching signature/);
    expect(rejection({ rawBody, headers, secret: stranger }).reason).toBe('no_matching_signature');
  });

  it('refuses malformed input', () => {
    expect(() => signDelivery({ secrets: [], eventId: event.id, deliveryId, timestamp: 1, rawBody })).toThrow(TypeError);
    expect(() => sign(['not-a-secret'])).toThrow(/whsec_/);
    expect(() => sign(['whsec_'])).toThrow(/whsec_/);
    expect(() => sign([newSecret()], 1.5)).toThrow(/whole unix seconds/);
    expect(() => signDelivery({ secrets: [newSecret()], eventId: 'a b', deliveryId, rawBody })).toThrow(/invalid id/);
  });
});

describe('verifyWebhook', () => {
  const secret = newSecret();

  it('accepts any header case, a fetch Headers and repeated signature headers', () => {
    const timestamp = nowSeconds();
    const headers = sign([secret], timestamp);
    const shouting = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));
    expect(verifyWebhook({ rawBody, headers: shouting, secret })).toEqual(event);
    expect(verifyWebhook({ rawBody, headers: new Headers(headers), secret })).toEqual(event);
    const [newHex] = headers['x-service-signature'].split(' ');
    expect(
      verifyWebhook({
        rawBody,
        headers: { ...headers, 'x-service-signature': [`v1=${'0'.repeat(64)}`, `v0=abc ${newHex}`] },
        secret,
      }),
    ).toEqual(event);
  });

  it('accepts a timestamp exactly at the tolerance, either way', () => {
    const now = Date.now();
    const timestamp = Math.floor(now / 1000);
    expect(verifyWebhook({ rawBody, headers: sign([secret], timestamp - 300), secret, now })).toEqual(event);
    expect(verifyWebhook({ rawBody, headers: sign([secret], timestamp + 300), secret, now })).toEqual(event);
  });

  it('rejects a tampered body', () => {
    const headers = sign([secret]);
    const error = rejection({ rawBody: rawBody.replace('12.5', '125'), headers, secret });
    expect(error.reason).toBe('no_matching_signature');
    expect(error.message).toMatch(/no signature matches/);
    // Re-serializing the parsed body is a different byte string, hence "raw bytes, before parsing".
    const reformatted = JSON.stringify(JSON.parse(rawBody), null, 2);
    expect(rejection({ rawBody: reformatted, headers, secret }).reason).toBe('no_matching_signature');
  });

  it('rejects the wrong secret', () => {
    const error = rejection({ rawBody, headers: sign([secret]), secret: newSecret() });
    expect(error.reason).toBe('no_matching_signature');
  });

  it('rejects a stale timestamp (301 s)', () => {
    const now = Date.now();
    const error = rejection({ rawBody, headers: sign([secret], Math.floor(now / 1000) - 301), secret, now });
    expect(error.reason).toBe('timestamp_outside_tolerance');
    expect(error.message).toMatch(/301 s old, outside the tolerance of 300 s/);
    expect(() => Stripe.webhooks.constructEvent(rawBody, `t=${Math.floor(now / 1000) - 301},v1=x`, secret, 300)).toThrow();
  });

  it('rejects a timestamp beyond the tolerance in the future', () => {
    const now = Date.now();
    const error = rejection({ rawBody, headers: sign([secret], Math.floor(now / 1000) + 301), secret, now });
    expect(error.reason).toBe('timestamp_outside_tolerance');
    expect(error.message).toMatch(/301 s in the future/);
    expect(rejection({ rawBody, headers: sign([secret], Math.floor(now / 1000) + 11), secret, now, toleranceSeconds: 10 }).reason).toBe(
      'timestamp_outside_tolerance',
    );
  });

  it('rejects a timestamp that is not an integer', () => {
    const headers = sign([secret]);
    for (const value of [`${headers['x-service-timestamp']}.5`, 'abc', '-12', '1e9', '0x10']) {
      const error = rejection({ rawBody, headers: { ...headers, 'x-service-timestamp': value }, secret });
      expect(error.reason).toBe('invalid_timestamp');
      expect(error.message).toMatch(/not an integer/);
    }
  });

  it('rejects missing headers, naming them', () => {
    const headers = sign([secret]);
    for (const name of ['x-service-signature', 'x-service-timestamp'] as const) {
      const { [name]: _dropped, ...rest } = headers;
      const error = rejection({ rawBody, headers: rest, secret });
      expect(error.reason).toBe('missing_header');
      expect(error.message).toBe(`missing ${name} header`);
      expect(rejection({ rawBody, headers: { ...headers, [name]: '' }, secret }).reason).toBe('missing_header');
    }
    const noV1 = rejection({ rawBody, headers: { ...headers, 'x-service-signature': 'v2=abc' }, secret });
    expect(noV1.reason).toBe('no_matching_signature');
    expect(noV1.message).toMatch(/no v1= signature/);
  });

  it('rejects a malformed signature value without throwing anything else', () => {
    const headers = sign([secret]);
    for (const value of ['v1=', 'v1=zz', `v1=${'a'.repeat(63)}`, `v1=${'a'.repeat(66)}`]) {
      expect(rejection({ rawBody, headers: { ...headers, 'x-service-signature': value }, secret }).reason).toBe('no_matching_signature');
    }
  });

  it('reports an authentic body that is not an event', () => {
    const body = 'not json';
    const error = rejection({ rawBody: body, headers: sign([secret], nowSeconds(), body), secret });
    expect(error.reason).toBe('invalid_body');
  });

  it('imports nothing but node:crypto at run time (it is published for receivers)', () => {
    const source = readFileSync(new URL('../src/modules/webhooks/verify-webhook.ts', import.meta.url), 'utf8');
    const runtimeImports = [...source.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm)].map((match) => match[1]);
    expect(runtimeImports).toEqual(['node:crypto']);
  });
});
