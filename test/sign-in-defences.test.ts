import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASHING_THREADS, MAX_WAITING_SIGN_INS } from '../src/modules/members/passwords.js';
import { createMember, inviteToken } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

/** A request that fails validation: it is counted all the same, and costs no hashing. */
const incomplete = { email: 'someone@acme.test' };

async function invite(org: TestOrg, email: string): Promise<string> {
  const res = await org.request('post', '/v1/members').send({ email, role: 'viewer' }).expect(201);
  return inviteToken(res.body.inviteUrl);
}

describe('attempts per client address', () => {
  describe('behind one proxy (TRUST_PROXY=1)', () => {
    let env: TestEnv;
    let org: TestOrg;
    beforeAll(async () => {
      // The limit as configured by default: an empty variable is unset.
      env = await createTestEnv({ TRUST_PROXY: '1', SIGN_IN_ATTEMPTS_PER_ADDRESS: '' });
      org = await env.createOrg();
    });
    afterAll(() => env?.close());

    it('allows 30 a minute from one address, counted across sign-in and invite acceptance, then 429 with retry-after', async () => {
      expect(env.config.SIGN_IN_ATTEMPTS_PER_ADDRESS).toBe(30);
      const from = (address: string) => (path: string) => env.http.post(path).set('x-forwarded-for', address);
      const client = from('203.0.113.5');
      // 40 at once: the count is taken before anything else, so exactly 30 get through.
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => client(i % 2 ? '/v1/session' : '/v1/invites/accept').send(incomplete)),
      );
      const statuses = answers.map((res) => res.status);
      expect(statuses.filter((status) => status === 422)).toHaveLength(30);
      expect(statuses.filter((status) => status === 429)).toHaveLength(10);
      const refused = answers.find((res) => res.status === 429)!;
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);

      // Even the right password and a valid invite wait: the address is out of attempts.
      const member = await createMember(env, org, 'viewer');
      await client('/v1/session').send({ email: member.email, password: member.password }).expect(429);
      const token = await invite(org, 'limited@acme.test');
      await client('/v1/invites/accept').send({ token, password: 'a long enough password' }).expect(429);
      // Addresses the client writes before the proxy's own entry change nothing: the proxy appended the real one.
      await env.http.post('/v1/session').set('x-forwarded-for', '198.51.100.1, 203.0.113.5').send(incomplete).expect(429);

      // Another client address has its own attempts; the invite still works from there.
      await from('203.0.113.6')('/v1/invites/accept').send({ token, password: 'a long enough password' }).expect(200);
    });

    it('is shared by every web process', async () => {
      const peer = await env.createPeer();
      const address = '203.0.113.9';
      for (const http of [env.http, peer.http]) {
        const answers = await Promise.all(
          Array.from({ length: 15 }, () => http.post('/v1/session').set('x-forwarded-for', address).send(incomplete)),
        );
        expect(answers.map((res) => res.status)).toEqual(Array(15).fill(422));
      }
      await peer.http.post('/v1/session').set('x-forwarded-for', address).send(incomplete).expect(429);
      await env.http.post('/v1/session').set('x-forwarded-for', address).send(incomplete).expect(429);
    });

    it('counts an IPv6 client by its /64', async () => {
      const answers = await Promise.all(
        Array.from({ length: 31 }, (_, i) =>
          env.http
            .post('/v1/session')
            .set('x-forwarded-for', `2001:db8:1:2::${i.toString(16)}`)
            .send(incomplete),
        ),
      );
      expect(answers.map((res) => res.status).filter((status) => status === 429)).toHaveLength(1);
      await env.http.post('/v1/session').set('x-forwarded-for', '2001:db8:1:3::1').send(incomplete).expect(422);
    });
  });

  describe('without TRUST_PROXY', () => {
    let env: TestEnv;
    beforeAll(async () => {
      env = await createTestEnv({ SIGN_IN_ATTEMPTS_PER_ADDRESS: '' });
    });
    afterAll(() => env?.close());

    it('ignores x-forwarded-for, which any client can write: every address it names is the same client', async () => {
      const answers = await Promise.all(
        Array.from({ length: 31 }, (_, i) =>
          env.http
            .post('/v1/session')
            .set('x-forwarded-for', `198.51.100.${i + 1}`)
            .send(incomplete),
        ),
      );
      expect(answers.map((res) => res.status).filter((status) => status === 429)).toHaveLength(1);
      await env.http.post('/v1/session').send(incomplete).expect(429);
    });
  });
});

describe('password hashing under a flood of sign-ins', () => {
  let env: TestEnv;
  let org: TestOrg;
  beforeAll(async () => {
    env = await createTestEnv();
    org = await env.createOrg();
  });
  afterAll(() => env?.close());

  const timed = async <T>(work: () => PromiseLike<T>) => {
    const started = performance.now();
    const result = await work();
    return { result, ms: performance.now() - started };
  };

  it(`refuses at once (503) while ${MAX_WAITING_SIGN_INS} sign-ins wait, and /healthz, DNS lookups and invite acceptance do not wait behind them`, async () => {
    const token = await invite(org, 'newcomer@acme.test');
    const flood = HASHING_THREADS + MAX_WAITING_SIGN_INS + 100;
    let sawRefusal!: () => void;
    const refusal = new Promise<void>((resolve) => (sawRefusal = resolve));
    const signIns = Promise.all(
      Array.from({ length: flood }, (_, i) =>
        timed(() => env.http.post('/v1/session').send({ email: `nobody-${i}@flood.test`, password: 'made-up password' })).then((answer) => {
          if (answer.result.status === 503) sawRefusal();
          return answer;
        }),
      ),
    );
    // Once a sign-in is refused the queue is full: everything below runs while it is.
    await Promise.race([refusal, signIns]);
    const [health, dns, acceptance] = await Promise.all([
      timed(() => env.http.get('/healthz')),
      timed(() => lookup('localhost')),
      timed(() => env.http.post('/v1/invites/accept').send({ token, password: 'a long enough password' })),
    ]);
    const answers = await signIns;

    const refused = answers.filter((answer) => answer.result.status === 503);
    const checked = answers.filter((answer) => answer.result.status === 401);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length + checked.length).toBe(flood);
    for (const { result } of refused) {
      expect(result.body).toMatchObject({ status: 503, code: 'unavailable' });
      expect(Number(result.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // "At once": a refusal takes less time than a typical checked sign-in waits.
    const medianChecked = checked.map((answer) => answer.ms).sort((a, b) => a - b)[Math.floor(checked.length / 2)]!;
    expect(Math.max(...refused.map((answer) => answer.ms))).toBeLessThan(medianChecked);
    expect(health.result.status).toBe(200);
    expect(health.ms).toBeLessThan(medianChecked);
    expect(dns.ms).toBeLessThan(medianChecked);
    expect(acceptance.result.status).toBe(200);
    expect(acceptance.ms).toBeLessThan(medianChecked);

    // A refused sign-in was never checked: it is no failure of its email.
    const [counted] = await env.services.sql.query<{ failures: number }>(
      null,
      "SELECT count(*)::int AS failures FROM sign_in_failures WHERE email_key LIKE '%@flood.test'",
      [],
    );
    expect(counted!.failures).toBe(checked.length);
  }, 90_000);
});

describe('the routes that set the session cookie', () => {
  let env: TestEnv;
  let org: TestOrg;
  beforeAll(async () => {
    env = await createTestEnv();
    org = await env.createOrg();
  });
  afterAll(() => env?.close());

  it('take JSON only: any other content type, or none, is 415 and sets no cookie', async () => {
    const member = await createMember(env, org, 'viewer');
    const token = await invite(org, 'typed@acme.test');
    const bodies = {
      '/v1/session': JSON.stringify({ email: member.email, password: member.password }),
      '/v1/invites/accept': JSON.stringify({ token, password: 'a long enough password' }),
    };
    for (const [path, body] of Object.entries(bodies)) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
        const res = await env.http.post(path).set('content-type', type).send(body).expect(415);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({ status: 415, code: 'unsupported_media_type' });
        expect(res.headers['set-cookie']).toBeUndefined();
      }
      await env.http.post(path).unset('content-type').send(Buffer.from(body)).expect(415);
    }
    // The same bodies as JSON (with a charset parameter) go through.
    await env.http.post('/v1/session').set('content-type', 'Application/JSON; charset=utf-8').send(bodies['/v1/session']).expect(200);
    await env.http.post('/v1/invites/accept').set('content-type', 'application/json').send(bodies['/v1/invites/accept']).expect(200);
  });

  it('refuse a request whose origin is not PUBLIC_URL’s (null included) with 403 csrf_failed, and take one from it or without one', async () => {
    const member = await createMember(env, org, 'viewer');
    const token = await invite(org, 'origin@acme.test');
    const own = new URL(env.config.PUBLIC_URL).origin;
    for (const origin of ['https://evil.example', 'null', own.replace('127.0.0.1', 'localhost'), `${own}.evil.example`]) {
      for (const [path, body] of [
        ['/v1/session', { email: member.email, password: member.password }],
        ['/v1/invites/accept', { token, password: 'a long enough password' }],
      ] as const) {
        const res = await env.http.post(path).set('origin', origin).send(body).expect(403);
        expect(res.body).toMatchObject({ status: 403, code: 'csrf_failed' });
        expect(res.headers['set-cookie']).toBeUndefined();
      }
    }
    await env.http.post('/v1/session').set('origin', own).send({ email: member.email, password: member.password }).expect(200);
    await env.http.post('/v1/invites/accept').send({ token, password: 'a long enough password' }).expect(200);
  });
});
