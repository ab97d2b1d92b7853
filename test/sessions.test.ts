import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.js';
import { createMember, inviteToken, type TestMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

let reviewer: TestMember;

beforeAll(async () => {
  reviewer = await createMember(env, org, 'reviewer', 'Reviewer.One@Acme.test');
});

function cookieOf(res: supertest.Response): string {
  const cookies = res.headers['set-cookie'] as unknown as string[];
  const session = cookies.find((cookie) => cookie.startsWith('ag_session='));
  if (!session) throw new Error('no ag_session cookie was set');
  return session;
}

const signIn = (body: Record<string, unknown>, http = env.http) => http.post('/v1/session').send(body);

describe('POST /v1/session', () => {
  it('signs in with email (any case) and password: the member, a CSRF token, and the session cookie', async () => {
    const res = await signIn({ email: 'reviewer.one@ACME.test', password: reviewer.password }).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['csrfToken', 'member']);
    expect(res.body.member).toMatchObject({
      id: reviewer.id,
      email: 'Reviewer.One@Acme.test',
      role: 'reviewer',
      emailNotifications: true,
      slackLinked: false,
    });
    expect(res.body.member.lastSignInAt).not.toBeNull();
    const cookie = cookieOf(res);
    expect(cookie).toMatch(/^ag_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Lax/i);
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).not.toMatch(/; Secure/i);
  });

  it('marks the cookie Secure outside development and test', async () => {
    const production = supertest(createApp({ ...env.services, config: { ...env.config, NODE_ENV: 'production' } }));
    const res = await signIn({ email: reviewer.email, password: reviewer.password }, production).expect(200);
    expect(cookieOf(res)).toMatch(/; Secure/i);
  });

  it('answers a wrong password and an unknown email with the same 401, after the same work', async () => {
    const timed = async (body: Record<string, unknown>) => {
      const started = performance.now();
      const res = await signIn(body).expect(401);
      return { body: res.body, ms: performance.now() - started };
    };
    const wrong: { body: unknown; ms: number }[] = [];
    const unknown: { body: unknown; ms: number }[] = [];
    for (let i = 0; i < 3; i++) {
      wrong.push(await timed({ email: reviewer.email, password: `wrong-password-${i}` }));
      unknown.push(await timed({ email: `nobody-${i}@acme.test`, password: 'whatever-password' }));
    }
    expect(unknown[0]!.body).toEqual(wrong[0]!.body);
    expect(wrong[0]!.body).toMatchObject({ status: 401, code: 'unauthorized' });
    // Both pay for one scrypt: the unknown email is not answered early (the medians within a factor of 3).
    const median = (runs: { ms: number }[]) => runs.map((run) => run.ms).sort((a, b) => a - b)[1]!;
    expect(median(unknown)).toBeGreaterThan(median(wrong) / 3);
    expect(median(wrong)).toBeGreaterThan(median(unknown) / 3);
  });

  it('locks an email after ten failures in fifteen minutes, even for the right password, with retry-after', async () => {
    const member = await createMember(env, org, 'viewer');
    for (let i = 0; i < 10; i++) await signIn({ email: member.email, password: `not-it-${i}-xxxx` }).expect(401);
    const locked = await signIn({ email: member.email, password: member.password }).expect(429);
    expect(locked.body).toMatchObject({ status: 429, code: 'rate_limited' });
    const retryAfter = Number(locked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // Another email is not affected; and once the window has passed, the right password works again.
    await signIn({ email: reviewer.email, password: reviewer.password }).expect(200);
    await env.services.sql.query(null, "UPDATE sign_in_failures SET failed_at = failed_at - interval '16 minutes' WHERE email_key = $1", [
      member.email.toLowerCase(),
    ]);
    await signIn({ email: member.email, password: member.password }).expect(200);
  });

  it('counts concurrent guesses before checking them: of 80 at once, ten are checked, and the right password, sent last, is 429', async () => {
    const member = await createMember(env, org, 'viewer');
    const guesses = Array.from({ length: 79 }, (_, i) => `guess-${i}-wrong-password`);
    const answers = await Promise.all([...guesses, member.password].map((password) => signIn({ email: member.email, password })));
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(70);
    expect(statuses.at(-1)).toBe(429);
    expect(answers.at(-1)!.body).toMatchObject({ code: 'rate_limited' });
    expect(answers.at(-1)!.headers['set-cookie']).toBeUndefined();
    // The eleventh guess after ten concurrent failures is refused too, whatever its password.
    await signIn({ email: member.email, password: member.password }).expect(429);
  });

  it('does not count a right password as a failure', async () => {
    const member = await createMember(env, org, 'viewer');
    for (let i = 0; i < 12; i++) await signIn({ email: member.email, password: member.password }).expect(200);
    const [counted] = await env.services.sql.query<{ failures: number }>(
      null,
      'SELECT count(*)::int AS failures FROM sign_in_failures WHERE email_key = $1',
      [member.email.toLowerCase()],
    );
    expect(counted!.failures).toBe(0);
  });

  it('asks for orgId when the email and password open members of two organizations', async () => {
    const other = await env.createOrg();
    const email = 'two-orgs@acme.test';
    const first = await createMember(env, org, 'viewer', email);
    const invited = await other.request('post', '/v1/members').send({ email, role: 'reviewer' }).expect(201);
    await env.http
      .post('/v1/invites/accept')
      .send({ token: inviteToken(invited.body.inviteUrl), password: first.password })
      .expect(200);

    const ambiguous = await signIn({ email, password: first.password }).expect(422);
    expect(ambiguous.body.errors).toEqual([{ path: 'orgId', message: expect.stringContaining('several organizations') }]);
    const chosen = await signIn({ email, password: first.password, orgId: other.orgId }).expect(200);
    expect(chosen.body.member).toMatchObject({ id: invited.body.member.id, role: 'reviewer' });
  });

  it('refuses malformed sign-ins with 422 naming the field', async () => {
    const res = await signIn({ email: reviewer.email }).expect(422);
    expect(res.body.errors.map((error: { path: string }) => error.path)).toEqual(['password']);
  });
});

describe('GET and DELETE /v1/session', () => {
  it('returns the member and the CSRF token of the session, or 401', async () => {
    const res = await reviewer.agent.get('/v1/session').expect(200);
    expect(res.body).toEqual({ member: expect.objectContaining({ id: reviewer.id }), csrfToken: reviewer.csrfToken });
    const anonymous = await env.http.get('/v1/session').expect(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer');
    // An API key is not a session.
    await org.request('get', '/v1/session').expect(401);
  });

  it('signs out: 204, the cookie cleared, and the session gone on the server', async () => {
    const agent = supertest.agent(env.baseUrl);
    const signedIn = await agent.post('/v1/session').send({ email: reviewer.email, password: reviewer.password }).expect(200);
    const cookie = cookieOf(signedIn).split(';')[0]!;
    await agent.delete('/v1/session').set('x-csrf-token', signedIn.body.csrfToken).expect(204);
    // Replaying the old cookie by hand: the server no longer knows it.
    await env.http.get('/v1/session').set('cookie', cookie).expect(401);
    const stored = await env.services.db.session.count({ where: { memberId: reviewer.id } });
    expect(stored).toBeGreaterThan(0); // the reviewer's own session from beforeAll, not the ended one
  });

  it('keeps only a hash of the cookie value', async () => {
    const res = await signIn({ email: reviewer.email, password: reviewer.password }).expect(200);
    const value = cookieOf(res).split(';')[0]!.split('=')[1]!;
    const rows = await env.services.sql.query<{ found: boolean }>(
      null,
      "SELECT bool_or(position(convert_to($1, 'UTF8') in token_hash) > 0 OR csrf_token = $1) AS found FROM sessions",
      [value],
    );
    expect(rows[0]!.found).toBe(false);
  });
});

describe('the session as a credential', () => {
  it('gives each role its scopes: a viewer reads but cannot decide, a reviewer decides, only an admin manages members', async () => {
    const viewer = await createMember(env, org, 'viewer');
    await org.request('put', '/v1/policies/review').send({}).expect(200);
    const pending = await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }).expect(201);

    await viewer.request('get', `/v1/approvals/${pending.body.id}`).expect(200);
    await viewer.request('get', '/v1/members').expect(200);
    const refused = await viewer.request('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'approved' }).expect(403);
    expect(refused.body).toMatchObject({ code: 'forbidden', detail: expect.stringContaining('approvals:decide') });
    await viewer.request('put', '/v1/policies/x').send({}).expect(403);

    await reviewer.request('post', '/v1/members').send({ email: 'sneaky@acme.test', role: 'admin' }).expect(403);
    await reviewer.request('get', '/v1/audit').expect(200);
    const decided = await reviewer.request('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    expect(decided.body.decidedBy).toEqual({ type: 'user', id: reviewer.id, email: reviewer.email });

    const admin = await createMember(env, org, 'admin');
    await admin.request('get', '/v1/keys').expect(200);
  });

  it('audits a member’s actions with actor {type: user, id}', async () => {
    const created = await org.request('post', '/v1/approvals').send({ action: 'audited', payload: {}, policyKey: 'review' }).expect(201);
    await reviewer.request('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'rejected', feedback: 'no' }).expect(200);
    const audit = await org.request('get', '/v1/audit').query({ type: 'approval.rejected', action: 'audited' }).expect(200);
    expect(audit.body.events).toHaveLength(1);
    expect(JSON.parse(audit.body.events[0].actor)).toEqual({ type: 'user', id: reviewer.id });
  });

  it('refuses a cookie-authenticated write without the CSRF token, or with another session’s', async () => {
    const other = await createMember(env, org, 'reviewer');
    for (const token of [undefined, '', other.csrfToken, `${reviewer.csrfToken}x`]) {
      const request = reviewer.agent.post('/v1/members').send({ email: 'x@acme.test', role: 'viewer' });
      const res = await (token === undefined ? request : request.set('x-csrf-token', token)).expect(403);
      expect(res.body).toMatchObject({ status: 403, code: 'csrf_failed' });
    }
    // Reads need no token.
    await reviewer.agent.get('/v1/members').expect(200);
  });

  it('uses the bearer key when a key and a cookie both come', async () => {
    const viewer = await createMember(env, org, 'viewer');
    // The viewer's cookie alone could not create a member, and there is no CSRF token here: the key decides.
    const res = await viewer.agent
      .post('/v1/members')
      .set('authorization', `Bearer ${org.key}`)
      .send({ email: 'by-key@acme.test', role: 'viewer' });
    expect(res.status).toBe(201);
    // A bad key with a good cookie is a 401, not a fall-back to the cookie.
    await viewer.agent.get('/v1/members').set('authorization', 'Bearer agk_nope').expect(401);
  });

  it('ends the session after 12 idle hours and after 7 days at most', async () => {
    const member = await createMember(env, org, 'viewer');
    await member.agent.get('/v1/session').expect(200);
    await env.services.sql.query(null, "UPDATE sessions SET last_used_at = now() - interval '12 hours 1 minute' WHERE member_id = $1", [
      member.id,
    ]);
    await member.agent.get('/v1/session').expect(401);

    const again = await createMember(env, org, 'viewer');
    await env.services.sql.query(null, "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE member_id = $1", [again.id]);
    await again.agent.get('/v1/session').expect(401);
  });
});

describe('PATCH /v1/members/me', () => {
  it('lets a member turn their email notifications off, with their session only', async () => {
    const res = await reviewer.request('patch', '/v1/members/me').send({ emailNotifications: false }).expect(200);
    expect(res.body).toMatchObject({ id: reviewer.id, emailNotifications: false });
    await reviewer.request('patch', '/v1/members/me').send({ emailNotifications: 'no' }).expect(422);
    await org.request('patch', '/v1/members/me').send({ emailNotifications: true }).expect(401);
    await reviewer.request('patch', '/v1/members/me').send({ emailNotifications: true }).expect(200);
  });
});
