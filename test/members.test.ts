import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/cli.js';
import { memberInviteMailConsumer } from '../src/consumers/member-invite-mail/member-invite-mail.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain } from './support/audit-chain.js';
import { eventually } from './support/eventually.js';
import { createMember, inviteToken } from './support/members.js';
import { startSmtpServer, type SmtpServer } from './support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let smtp: SmtpServer;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;

beforeAll(async () => {
  smtp = await startSmtpServer();
  env = await createTestEnv({ SMTP_URL: smtp.url, PUBLIC_URL: 'https://gate.acme.test/', OUTBOX_POLL_INTERVAL_MS: '100' });
  org = await env.createOrg();
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'member-invite-mail']);
});
afterAll(async () => {
  await worker.stop();
  await env.close();
  await smtp.close();
});

const accept = (body: Record<string, unknown>) => env.http.post('/v1/invites/accept').send(body);

describe('members API', () => {
  it('invites a member: 201 with the member and a single-use invite URL under PUBLIC_URL, and an invite mail', async () => {
    const res = await org.request('post', '/v1/members').send({ email: 'Ada@Acme.test', role: 'reviewer', name: 'Ada' }).expect(201);
    expect(res.body.inviteMail).toBe('queued');
    expect(res.body.member).toEqual({
      id: expect.any(String),
      email: 'Ada@Acme.test',
      name: 'Ada',
      role: 'reviewer',
      createdAt: expect.stringMatching(/Z$/),
      lastSignInAt: null,
      slackLinked: false,
      teamsLinked: false,
      emailNotifications: true,
      delegation: null,
    });
    expect(res.body.inviteUrl).toMatch(/^https:\/\/gate\.acme\.test\/console\/invite\/[A-Za-z0-9_-]{43}$/);

    // Mail servers may lowercase the domain of an envelope address.
    const mail = await eventually(() => smtp.received.find((received) => received.to.some((to) => to.toLowerCase() === 'ada@acme.test')));
    expect(mail.subject).toContain('invited');
    const mailed = /https:\/\/gate\.acme\.test\/console\/invite\/([A-Za-z0-9_-]{43})/.exec(mail.text)![1]!;
    // The mail carries an invite of its own: either link works once, and using one spends both.
    expect(mailed).not.toBe(inviteToken(res.body.inviteUrl));
    await accept({ token: mailed, password: 'correct horse battery' }).expect(200);
    await accept({ token: inviteToken(res.body.inviteUrl), password: 'correct horse battery' }).expect(410);
  });

  it('lists members; refuses a second member with the same email in any case with 409', async () => {
    await org.request('post', '/v1/members').send({ email: 'grace@acme.test', role: 'viewer' }).expect(201);
    const duplicate = await org.request('post', '/v1/members').send({ email: 'GRACE@acme.test', role: 'admin' }).expect(409);
    expect(duplicate.body.code).toBe('conflict');
    const list = await org.request('get', '/v1/members').expect(200);
    expect(list.body.members.map((member: { email: string }) => member.email)).toContain('grace@acme.test');
    // The same email may belong to another organization.
    const other = await env.createOrg();
    await other.request('post', '/v1/members').send({ email: 'grace@acme.test', role: 'viewer' }).expect(201);
    expect((await other.request('get', '/v1/members').expect(200)).body.members).toHaveLength(1);
  });

  it.each([
    ['a bad email', { email: 'not-an-email', role: 'viewer' }, 'email'],
    ['an unknown role', { email: 'a@acme.test', role: 'owner' }, 'role'],
    ['an unknown field', { email: 'a@acme.test', role: 'viewer', admin: true }, 'admin'],
  ])('refuses %s with 422 naming the field', async (_name, body, path) => {
    const res = await org.request('post', '/v1/members').send(body).expect(422);
    expect(res.body.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('changes role and name, audits it, and a demotion applies to the member’s open session at once', async () => {
    const member = await createMember(env, org, 'reviewer');
    await member.request('get', '/v1/audit').expect(200);
    await org.request('put', '/v1/policies/review').send({}).expect(200);
    const pending = await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'review' }).expect(201);

    const res = await org.request('patch', `/v1/members/${member.id}`).send({ role: 'viewer', name: 'Demoted' }).expect(200);
    expect(res.body).toMatchObject({ role: 'viewer', name: 'Demoted' });
    await member.request('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'approved' }).expect(403);

    const chain = await readChain(env.services.db, org.orgId);
    const updated = chain.filter((event) => event.type === 'member.updated' && event.data.memberId === member.id).pop()!;
    expect(updated.data).toMatchObject({ role: 'viewer', previousRole: 'reviewer', name: 'Demoted' });
    expect(JSON.parse(updated.actor)).toEqual({ type: 'api_key', id: org.keyId });
  });

  it('links and clears a Slack identity', async () => {
    const member = await createMember(env, org, 'reviewer');
    const linked = await org
      .request('patch', `/v1/members/${member.id}`)
      .send({ slack: { teamId: 'T1', userId: 'U1' } })
      .expect(200);
    expect(linked.body.slackLinked).toBe(true);
    const cleared = await org.request('patch', `/v1/members/${member.id}`).send({ slack: null }).expect(200);
    expect(cleared.body.slackLinked).toBe(false);
    await org
      .request('patch', `/v1/members/${member.id}`)
      .send({ slack: { teamId: 'T1' } })
      .expect(422);
  });

  it('answers 409 conflict for a Slack identity another member holds, set by an admin or redeemed at once by several', async () => {
    const [holder, other] = await Promise.all([createMember(env, org, 'reviewer'), createMember(env, org, 'reviewer')]);
    await org
      .request('patch', `/v1/members/${holder.id}`)
      .send({ slack: { teamId: 'T9', userId: 'U9' } })
      .expect(200);
    const taken = await org
      .request('patch', `/v1/members/${other.id}`)
      .send({ slack: { teamId: 'T9', userId: 'U9' } })
      .expect(409);
    expect(taken.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(taken.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('linked to another member') });
    const listed = (await org.request('get', '/v1/members').expect(200)).body.members as { id: string; slackLinked: boolean }[];
    expect(listed.find((member) => member.id === other.id)!.slackLinked).toBe(false);

    // Ten members redeem a link for one unlinked identity at the same moment: one holds it, nine are told why.
    const racers = await Promise.all(Array.from({ length: 10 }, () => createMember(env, org, 'reviewer')));
    const tokens = await Promise.all(
      racers.map(() => env.services.members.issueSlackLink(org.orgId, 'T9', 'U-RACE').then((url) => url.split('/').pop()!)),
    );
    const answers = await Promise.all(racers.map((racer, i) => racer.request('post', '/v1/session/slack-link').send({ token: tokens[i] })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([204, ...Array(9).fill(409)]);
    for (const answer of answers.filter((answer) => answer.status === 409)) expect(answer.body.code).toBe('conflict');
    const holders = await env.services.db.member.findMany({ where: { orgId: org.orgId, slackUserId: 'U-RACE' } });
    expect(holders).toHaveLength(1);
  });

  it('removes a member: 204, every session of theirs ends at once, and it is audited', async () => {
    const member = await createMember(env, org, 'reviewer');
    await member.request('get', '/v1/session').expect(200);
    await org.request('delete', `/v1/members/${member.id}`).expect(204);
    await member.request('get', '/v1/session').expect(401);
    await member.request('get', '/v1/approvals').expect(401);
    await org.request('delete', `/v1/members/${member.id}`).expect(404);
    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.some((event) => event.type === 'member.removed' && event.data.memberId === member.id)).toBe(true);
  });

  it('keeps the last admin: demoting or removing them is 409, also when two admins go at once', async () => {
    const lonely = await env.createOrg();
    const admin = await createMember(env, lonely, 'admin');
    const demote = await lonely.request('patch', `/v1/members/${admin.id}`).send({ role: 'reviewer' }).expect(409);
    expect(demote.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('last admin') });
    await lonely.request('delete', `/v1/members/${admin.id}`).expect(409);
    // An admin may still rename themselves.
    await admin.request('patch', `/v1/members/${admin.id}`).send({ name: 'Still admin' }).expect(200);
  });

  it('lets only one of two admins go when both are demoted or removed at the same moment', async () => {
    for (let round = 0; round < 5; round++) {
      const pair = await env.createOrg();
      const [first, second] = [await createMember(env, pair, 'admin'), await createMember(env, pair, 'admin')];
      const results = await Promise.all([
        pair.request('patch', `/v1/members/${first.id}`).send({ role: 'viewer' }),
        pair.request('delete', `/v1/members/${second.id}`),
      ]);
      expect(results.map((res) => res.status).sort()).toEqual([results.find((res) => res.status !== 409)!.status, 409].sort());
      const admins = (await pair.request('get', '/v1/members').expect(200)).body.members.filter(
        (member: { role: string }) => member.role === 'admin',
      );
      expect(admins).toHaveLength(1);
    }
  });

  it('needs members:read to list and members:write to change, and hides other organizations’ members', async () => {
    const reader = await env.createKey(org.orgId, ['members:read']);
    const member = await createMember(env, org, 'viewer');
    await env.http.get('/v1/members').set('authorization', `Bearer ${reader.key}`).expect(200);
    await env.http
      .post('/v1/members')
      .set('authorization', `Bearer ${reader.key}`)
      .send({ email: 'z@acme.test', role: 'viewer' })
      .expect(403);
    const other = await env.createOrg();
    await other.request('patch', `/v1/members/${member.id}`).send({ name: 'hijack' }).expect(404);
    await other.request('delete', `/v1/members/${member.id}`).expect(404);
    await org.request('patch', '/v1/members/not-a-uuid').send({ name: 'x' }).expect(404);
  });
});

describe('POST /v1/invites/accept', () => {
  async function invite(email: string) {
    return inviteToken((await org.request('post', '/v1/members').send({ email, role: 'reviewer' }).expect(201)).body.inviteUrl);
  }

  it('sets the password and the name, and signs the member in', async () => {
    const token = await invite('new-hire@acme.test');
    const res = await accept({ token, password: 'a long enough password', name: 'New Hire' }).expect(200);
    expect(res.body.member).toMatchObject({ email: 'new-hire@acme.test', name: 'New Hire' });
    expect(res.headers['set-cookie']).toEqual([expect.stringMatching(/^ag_session=/)]);
    await env.http.post('/v1/session').send({ email: 'new-hire@acme.test', password: 'a long enough password' }).expect(200);
  });

  it('refuses a short password with 422 naming it, and the invite stays usable', async () => {
    const token = await invite('short@acme.test');
    const res = await accept({ token, password: 'short' }).expect(422);
    expect(res.body.errors).toEqual([{ path: 'password', message: expect.stringContaining('10 characters') }]);
    await accept({ token, password: 'now long enough' }).expect(200);
  });

  it('answers 410 gone for an unknown, used or expired invite', async () => {
    const unknown = await accept({ token: 'x'.repeat(43), password: 'long enough password' }).expect(410);
    expect(unknown.body).toMatchObject({ status: 410, code: 'gone' });
    const token = await invite('once@acme.test');
    await accept({ token, password: 'long enough password' }).expect(200);
    await accept({ token, password: 'another long password' }).expect(410);

    const expiring = await invite('late@acme.test');
    await env.services.sql.query(
      null,
      "UPDATE member_invites SET expires_at = now() - interval '1 second' WHERE member_id IN (SELECT id FROM members WHERE email = 'late@acme.test')",
      [],
    );
    await accept({ token: expiring, password: 'long enough password' }).expect(410);
  });

  it('lets exactly one of many concurrent uses of one invite through', async () => {
    const token = await invite('race@acme.test');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => accept({ token, password: `long enough password ${i}` })));
    expect(results.map((res) => res.status).sort()).toEqual([200, ...Array(9).fill(410)]);
  });
});

describe('POST /v1/invites/preview', () => {
  const preview = (body: unknown) => env.http.post('/v1/invites/preview').send(body as object);

  it('names the organization, role and email of a usable invite, without using it up', async () => {
    const res = await org.request('post', '/v1/members').send({ email: 'preview@acme.test', role: 'viewer' }).expect(201);
    const token = inviteToken(res.body.inviteUrl);
    const [{ name }] = (await env.services.sql.query<{ name: string }>(null, 'SELECT name FROM organizations WHERE id = $1', [
      org.orgId,
    ])) as [{ name: string }];
    const shown = await preview({ token }).expect(200);
    expect(shown.body).toEqual({ organization: name, role: 'viewer', email: 'preview@acme.test' });
    await preview({ token }).expect(200);
    await accept({ token, password: 'long enough password' }).expect(200);
    // Used: gone, as an unknown token is.
    expect((await preview({ token }).expect(410)).body).toMatchObject({ code: 'gone' });
    await preview({ token: 'x'.repeat(43) }).expect(410);
  });

  it('answers 422 naming the field for a missing or malformed token', async () => {
    expect((await preview({}).expect(422)).body.errors).toEqual([{ path: 'token', message: expect.any(String) }]);
    expect((await preview({ token: 'x'.repeat(201) }).expect(422)).body.errors[0].path).toBe('token');
    expect((await preview({ token: 'x', extra: 1 }).expect(422)).body.errors[0].path).toBe('extra');
  });
});

describe('the invite mail, once the member has a password', () => {
  // No worker here: each test sends the mail itself, when it wants, as a paused or slow worker would.
  let quiet: TestEnv;
  let quietOrg: TestOrg;
  beforeAll(async () => {
    quiet = await createTestEnv({ SMTP_URL: smtp.url, PUBLIC_URL: 'https://gate.acme.test' });
    quietOrg = await quiet.createOrg();
  });
  afterAll(() => quiet?.close());

  const acceptIt = (body: Record<string, unknown>) => quiet.http.post('/v1/invites/accept').send(body);
  const mailsTo = (email: string) => smtp.received.filter((mail) => mail.to.some((to) => to.toLowerCase() === email));
  const mailedToken = (text: string) => /\/console\/invite\/([A-Za-z0-9_-]{43})/.exec(text)![1]!;

  async function newMember(email: string) {
    const res = await quietOrg.request('post', '/v1/members').send({ email, role: 'admin' }).expect(201);
    const [row] = await quiet.services.sql.query<{ eventId: string }>(
      null,
      `SELECT o.event_id AS "eventId" FROM outbox_messages o
       JOIN audit_events a ON a.org_id = o.org_id AND a.seq = o.audit_seq
       WHERE o.event_type = 'member.created' AND a.data::jsonb ->> 'memberId' = $1`,
      [res.body.member.id],
    );
    const [event] = await quiet.services.outbox.load([row!.eventId]);
    // What the worker does with the event, each time it runs it (a retry runs it again).
    const sendMail = () => memberInviteMailConsumer.handle(quiet.services)(event!);
    return { id: res.body.member.id as string, token: inviteToken(res.body.inviteUrl), sendMail };
  }

  it('is not sent after the member accepted, and issues no token', async () => {
    const member = await newMember('late-mail@acme.test');
    await acceptIt({ token: member.token, password: 'the password I chose' }).expect(200);
    expect(await member.sendMail()).toMatchObject({ skipped: expect.any(String) });
    expect(mailsTo('late-mail@acme.test')).toEqual([]);
    expect(await quiet.services.db.memberInvite.count({ where: { memberId: member.id } })).toBe(0);
    await quiet.http.post('/v1/session').send({ email: 'late-mail@acme.test', password: 'the password I chose' }).expect(200);
  });

  it('sent again after acceptance (a retry), is not sent, and the first mail’s token is spent', async () => {
    const member = await newMember('retried-mail@acme.test');
    expect(await member.sendMail()).toEqual({ sent: 1 });
    const first = mailedToken((await eventually(() => mailsTo('retried-mail@acme.test')[0])).text);
    await acceptIt({ token: member.token, password: 'the password I chose' }).expect(200);
    expect(await member.sendMail()).toMatchObject({ skipped: expect.any(String) });
    expect(mailsTo('retried-mail@acme.test')).toHaveLength(1);
    await acceptIt({ token: first, password: 'a password of the attacker' }).expect(410);
    await quiet.http.post('/v1/session').send({ email: 'retried-mail@acme.test', password: 'the password I chose' }).expect(200);
  });

  it('racing the acceptance, leaves no mailed token that sets the password again', async () => {
    const members = await Promise.all(Array.from({ length: 20 }, (_, i) => newMember(`race-${i}@acme.test`)));
    await Promise.all(
      members.map((member) =>
        Promise.all([acceptIt({ token: member.token, password: 'the password I chose' }).expect(200), member.sendMail()]),
      ),
    );
    for (let i = 0; i < members.length; i++) {
      for (const mail of mailsTo(`race-${i}@acme.test`)) {
        await acceptIt({ token: mailedToken(mail.text), password: 'a password of the attacker' }).expect(410);
      }
      await quiet.http
        .post('/v1/session')
        .send({ email: `race-${i}@acme.test`, password: 'the password I chose' })
        .expect(200);
    }
  });
});

describe('npm run cli -- member:create', () => {
  const cli = (...args: string[]) => runCli(args, env.services, { publicUrl: env.config.PUBLIC_URL }) as Promise<Record<string, string>>;

  it('creates the first admin of an organization and prints an invite URL that works', async () => {
    const { orgId } = await cli('org:create', '--name', 'Fresh', '--plan', 'pro');
    const created = await cli('member:create', '--org', orgId!, '--email', 'first@fresh.test', '--role', 'admin', '--name', 'First');
    expect(created).toEqual({ id: expect.any(String), inviteUrl: expect.stringMatching(/^https:\/\/gate\.acme\.test\/console\/invite\//) });
    const signedIn = await accept({ token: inviteToken(created.inviteUrl!), password: 'first admin password' }).expect(200);
    expect(signedIn.body.member).toMatchObject({ role: 'admin', name: 'First' });
    const chain = await readChain(env.services.db, orgId!);
    expect(chain.map((event) => [event.type, JSON.parse(event.actor)])).toEqual([['member.created', { type: 'system', id: 'cli' }]]);
  });

  it('refuses an unknown organization and a bad role', async () => {
    await expect(
      cli('member:create', '--org', '00000000-0000-4000-8000-000000000000', '--email', 'a@b.test', '--role', 'admin'),
    ).rejects.toThrow(/No organization/);
    await expect(cli('member:create', '--org', org.orgId, '--email', 'a@b.test', '--role', 'owner')).rejects.toThrow(/--role/);
  });
});
