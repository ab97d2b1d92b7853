import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpiringSlots } from '../src/lib/expiring-slots.js';
import { eventually } from './support/eventually.js';
import { openStream } from './support/event-stream.js';
import { createMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

beforeAll(async () => {
  env = await createTestEnv({ EVENT_STREAM_HEARTBEAT_MS: '200' });
  org = await env.createOrg();
});
afterAll(() => env?.close());

const LIMIT = 10;
type Stream = Awaited<ReturnType<typeof openStream>>;

/** Opens `count` streams at once, each with the headers `headersOf` gives it, on `baseUrlOf`'s app. */
async function openMany(count: number, headersOf: (index: number) => Record<string, string>, baseUrlOf = (_index: number) => env.baseUrl) {
  return Promise.all(Array.from({ length: count }, (_, index) => openStream(baseUrlOf(index), headersOf(index))));
}

const closeAll = (streams: Stream[]) => Promise.all(streams.map((stream) => stream.close()));
const statuses = (streams: Stream[]) => streams.map((stream) => stream.response.status).sort();
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function sessionCookie(email: string, password: string): Promise<string> {
  const signedIn = await env.http.post('/v1/session').send({ email, password }).expect(200);
  return (signedIn.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
}

describe('GET /v1/approvals/events: at most 10 open streams per principal', () => {
  it('lets exactly 10 of many concurrent opens by one key through; the others are 429 rate_limited with retry-after', async () => {
    const key = await env.createKey(org.orgId, ['approvals:read']);
    const streams = await openMany(25, () => bearer(key.key));
    try {
      expect(statuses(streams)).toEqual([...Array(LIMIT).fill(200), ...Array(15).fill(429)]);
      const refused = streams.find((stream) => stream.response.status === 429)!;
      expect(refused.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const again = await fetch(`${env.baseUrl}/v1/approvals/events`, { headers: bearer(key.key) });
      expect(again.status).toBe(429);
      expect(await again.json()).toMatchObject({ status: 429, code: 'rate_limited' });
    } finally {
      await closeAll(streams);
    }
  });

  it('counts across web processes that share Redis', async () => {
    const key = await env.createKey(org.orgId, ['approvals:read']);
    const peer = await env.createPeer();
    const streams = await openMany(
      16,
      () => bearer(key.key),
      (index) => (index % 2 === 0 ? env.baseUrl : peer.baseUrl),
    );
    try {
      expect(statuses(streams)).toEqual([...Array(LIMIT).fill(200), ...Array(6).fill(429)]);
    } finally {
      await closeAll(streams);
    }
  });

  it('counts a member’s session and every key they own as one principal, and a service key with the keys it made', async () => {
    const admin = await createMember(env, org, 'admin');
    const [first, second] = await Promise.all(
      [0, 1].map(
        async () =>
          (
            await admin
              .request('post', '/v1/keys')
              .send({ scopes: ['approvals:read'] })
              .expect(201)
          ).body.secret as string,
      ),
    );
    const cookie = await sessionCookie(admin.email, admin.password);
    const theirs = await openMany(12, (index) => (index % 3 === 0 ? { cookie } : bearer(index % 3 === 1 ? first! : second!)));

    const service = await env.createKey(org.orgId, ['approvals:read', 'keys:write']);
    const made = (
      await env.http
        .post('/v1/keys')
        .set(bearer(service.key))
        .send({ scopes: ['approvals:read'] })
        .expect(201)
    ).body.secret as string;
    const services = await openMany(11, (index) => bearer(index % 2 === 0 ? service.key : made));
    // Another principal of the same organization is not held back by them.
    const other = await env.createKey(org.orgId, ['approvals:read']);
    const others = await openMany(LIMIT, () => bearer(other.key));
    try {
      expect(statuses(theirs)).toEqual([...Array(LIMIT).fill(200), 429, 429]);
      expect(statuses(services)).toEqual([...Array(LIMIT).fill(200), 429]);
      expect(statuses(others)).toEqual(Array(LIMIT).fill(200));
    } finally {
      await closeAll([...theirs, ...services, ...others]);
    }
  });

  it('frees a slot when a stream closes', async () => {
    const key = await env.createKey(org.orgId, ['approvals:read']);
    const streams = await openMany(LIMIT, () => bearer(key.key));
    try {
      expect(statuses(streams)).toEqual(Array(LIMIT).fill(200));
      const refused = await openStream(env.baseUrl, bearer(key.key));
      expect(refused.response.status).toBe(429);
      await streams.shift()!.close();
      const reopened = await eventually(async () => {
        const stream = await openStream(env.baseUrl, bearer(key.key));
        if (stream.response.status === 200) return stream;
        await stream.close();
        return null;
      });
      streams.push(reopened);
      expect((await openStream(env.baseUrl, bearer(key.key))).response.status).toBe(429);
    } finally {
      await closeAll(streams);
    }
  });
});

describe('ExpiringSlots', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(env.config.REDIS_URL.url);
  });
  afterAll(() => redis.quit());

  it('frees the slots of a holder that stopped renewing when its hold lapses, and keeps those renewed', async () => {
    const slots = new ExpiringSlots(redis, 2, 300);
    const key = `${env.config.REDIS_PREFIX}:expiring-slots-test`;
    expect(
      await slots.acquire([
        { key, holder: 'crashed' },
        { key, holder: 'alive' },
        { key, holder: 'third' },
      ]),
    ).toEqual([true, true, false]);
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await slots.renew([{ key, holder: 'alive' }]);
    }
    expect(
      await slots.acquire([
        { key, holder: 'third' },
        { key, holder: 'fourth' },
      ]),
    ).toEqual([true, false]);
  });
});
