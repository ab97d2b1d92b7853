import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain } from './support/audit-chain.js';
import {
  APP_ID,
  APP_SECRET,
  CHANNEL_ID,
  cardAction,
  makeCertificate,
  startBotFramework,
  TEAM_ID,
  TENANT_ID,
  type AdaptiveCardJson,
  type BotFramework,
} from './support/bot-framework.js';
import { eventually } from './support/eventually.js';
import { createMember, type TestMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let bot: BotFramework;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let alice: TestMember;
let bob: TestMember;
let vic: TestMember;
const aad = { alice: randomUUID(), vic: randomUUID(), bob: randomUUID(), stranger: randomUUID() };

beforeAll(async () => {
  bot = await startBotFramework();
  env = await createTestEnv({
    TEAMS_LOGIN_URL: bot.url,
    TEAMS_SERVICE_URL: bot.serviceUrl,
    TEAMS_OPENID_METADATA_URL: bot.openIdMetadataUrl,
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    OUTBOX_POLL_INTERVAL_MS: '100',
    PUBLIC_URL: 'https://gate.acme.test',
  });
  org = await env.createOrg();
  [alice, bob, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  await org
    .request('patch', `/v1/members/${alice.id}`)
    .send({ teams: { aadObjectId: aad.alice } })
    .expect(200);
  await org
    .request('patch', `/v1/members/${vic.id}`)
    .send({ teams: { aadObjectId: aad.vic } })
    .expect(200);
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  await org
    .request('put', '/v1/policies/no-teams')
    .send({ channels: ['api', 'console', 'email', 'slack'] })
    .expect(200);
  await org
    .request('put', '/v1/integrations/teams')
    .send({ appId: APP_ID, appSecret: APP_SECRET, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID })
    .expect(200);
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'teams-post', 'teams-update']);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await bot?.close();
});

async function requestApproval(policyKey = 'refunds', extra: Record<string, unknown> = {}) {
  return (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 120 }, policyKey, agent: 'billing-bot', ...extra })
      .expect(201)
  ).body as { id: string; status: string; createdAt: string };
}

const executes = (card: AdaptiveCardJson) => (card.actions ?? []).filter((action) => action.type === 'Action.Execute');
const textOf = (card: AdaptiveCardJson) => card.body.map((element) => (element.inlines ?? []).map((run) => run.text).join('')).join(' ');

/** The card posted for an approval (waits for it). */
function postedFor(approvalId: string) {
  return eventually(() =>
    bot.calls.find(
      (call) =>
        call.method === 'POST' && executes(call.activity.attachments![0]!.content).some((action) => action.data?.approvalId === approvalId),
    ),
  );
}

/** Sends a card action to the bot's endpoint with a token (a valid one unless given). */
function press(activity: ReturnType<typeof cardAction>, token = bot.token()) {
  return env.http.post('/teams/messages').set('authorization', `Bearer ${token}`).send(activity);
}

const status = async (id: string) => (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;

describe('PUT, GET and DELETE /v1/integrations/teams', () => {
  it('checks the credentials with Entra, answers without the secret, stores it sealed and audits the change', async () => {
    const other = await env.createOrg();
    const input = { appId: APP_ID.toUpperCase(), appSecret: APP_SECRET, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID };
    const put = await other.request('put', '/v1/integrations/teams').send(input).expect(200);
    expect(put.body).toEqual({
      appId: APP_ID,
      tenantId: TENANT_ID,
      teamId: TEAM_ID,
      channelId: CHANNEL_ID,
      credential: { type: 'secret' },
      connectedAt: expect.stringMatching(/Z$/),
    });
    expect((await other.request('get', '/v1/integrations/teams').expect(200)).body).toEqual(put.body);
    const row = await env.services.db.teamsIntegration.findUniqueOrThrow({ where: { orgId: other.orgId } });
    expect(JSON.stringify(row)).not.toContain(APP_SECRET);
    expect(row.appSecret).toMatch(/^v1\.[0-9a-f]{8}\./);
    await other.request('delete', '/v1/integrations/teams').expect(204);
    await other.request('get', '/v1/integrations/teams').expect(404);
    const chain = await readChain(env.services.db, other.orgId);
    expect(chain.filter((event) => event.type.startsWith('integration.')).map((event) => [event.type, event.data])).toEqual([
      ['integration.updated', { integration: 'teams', appId: APP_ID, tenantId: TENANT_ID, channelId: CHANNEL_ID }],
      ['integration.removed', { integration: 'teams', appId: APP_ID, tenantId: TENANT_ID, channelId: CHANNEL_ID }],
    ]);
    expect(JSON.stringify(chain)).not.toContain(APP_SECRET);
  });

  it('answers 422 naming the field for a secret Entra refuses and for bad input, 403 without the scope', async () => {
    const refused = await org
      .request('put', '/v1/integrations/teams')
      .send({ appId: APP_ID, appSecret: 'not-the-secret', tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID })
      .expect(422);
    expect(refused.body.errors).toEqual([{ path: 'appSecret', message: expect.stringContaining('Entra refused') }]);
    const bad = await org
      .request('put', '/v1/integrations/teams')
      .send({ appId: 'x', appSecret: 's', tenantId: 'y', teamId: '', channelId: '#c' })
      .expect(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual([
      'appId',
      'appSecret',
      'channelId',
      'teamId',
      'tenantId',
    ]);
    await vic.request('put', '/v1/integrations/teams').send({}).expect(403);
    expect((await org.request('get', '/v1/integrations/teams').expect(200)).body.channelId).toBe(CHANNEL_ID);
  });
});

describe('a bot that authenticates with a certificate', () => {
  const day = 24 * 3600_000;
  const valid = () => makeCertificate({ from: new Date(Date.now() - day), until: new Date(Date.now() + 30 * day) });
  const connect = (target: TestOrg, certificate: { certificate: string; privateKey: string }, extra: Record<string, unknown> = {}) =>
    target
      .request('put', '/v1/integrations/teams')
      .send({ appId: APP_ID, certificate, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID, ...extra });

  it('asks Entra for tokens with a signed client assertion, stores the key sealed and shows only the thumbprint and expiry', async () => {
    const other = await env.createOrg();
    const credential = valid();
    bot.registerCertificate(credential.certificate);
    const put = await connect(other, credential).expect(200);
    const certificate = new X509Certificate(credential.certificate);
    expect(put.body.credential).toEqual({
      type: 'certificate',
      thumbprintSha256: certificate.fingerprint256.replaceAll(':', ''),
      expiresAt: new Date(certificate.validTo).toISOString(),
    });
    const row = await env.services.db.teamsIntegration.findUniqueOrThrow({ where: { orgId: other.orgId } });
    expect(row.appSecret).toBeNull();
    expect(row.appCertificate).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(JSON.stringify(row)).not.toContain(credential.privateKey.split('\n')[1]);

    // The jobs' bot asks for its own token the same way: a card reaches the connector.
    const connection = await env.services.teams.connection(other.orgId);
    const activityId = await connection!.bot.post(CHANNEL_ID, { type: 'AdaptiveCard', version: '1.5', body: [] });
    expect(bot.calls.find((call) => call.activityId === activityId)).toMatchObject({ method: 'POST', conversationId: CHANNEL_ID });

    // Going back to a secret drops the certificate.
    await other
      .request('put', '/v1/integrations/teams')
      .send({ appId: APP_ID, appSecret: APP_SECRET, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID })
      .expect(200);
    const secretRow = await env.services.db.teamsIntegration.findUniqueOrThrow({ where: { orgId: other.orgId } });
    expect([secretRow.appCertificate, typeof secretRow.appSecret]).toEqual([null, 'string']);
  });

  it('refuses, naming the field, a certificate Entra does not know, an expired one, a key that is not its own or not RSA, and both credentials', async () => {
    const registered = valid();
    bot.registerCertificate(registered.certificate);
    const unknown = valid();
    const expired = makeCertificate({ from: new Date('2020-01-01T00:00:00Z'), until: new Date('2020-01-02T00:00:00Z') });
    bot.registerCertificate(expired.certificate);
    const elliptic = makeCertificate({ from: new Date(Date.now() - day), until: new Date(Date.now() + day), keyType: 'ec:P-256' });
    const cases: [Record<string, unknown>, { path: string; message: RegExp }][] = [
      [{ certificate: unknown }, { path: 'certificate', message: /Entra refused.*AADSTS700027.*not registered/ }],
      [
        { certificate: expired },
        { path: 'certificate.certificate', message: /valid from 2020-01-01T00:00:00.000Z to 2020-01-02T00:00:00.000Z, not now/ },
      ],
      [
        { certificate: { ...registered, privateKey: unknown.privateKey } },
        { path: 'certificate.privateKey', message: /not the key of certificate.certificate/ },
      ],
      [{ certificate: elliptic }, { path: 'certificate.privateKey', message: /must be an RSA key, not ec/ }],
      [
        { certificate: { ...registered, certificate: 'not a certificate' } },
        { path: 'certificate.certificate', message: /must be a PEM CERTIFICATE block/ },
      ],
      [
        { certificate: registered, appSecret: APP_SECRET },
        { path: 'appSecret', message: /exactly one of appSecret and certificate/ },
      ],
      [{}, { path: 'appSecret', message: /exactly one of appSecret and certificate/ }],
    ];
    const other = await env.createOrg();
    for (const [credential, error] of cases) {
      const res = await other
        .request('put', '/v1/integrations/teams')
        .send({ appId: APP_ID, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID, ...credential });
      expect(res.status, error.path).toBe(422);
      expect(res.body.errors).toEqual([{ path: error.path, message: expect.stringMatching(error.message) }]);
    }
    await other.request('get', '/v1/integrations/teams').expect(404);
  });
});

describe('pending requests in Teams', () => {
  it('are posted to the channel once, as an Adaptive Card with Approve, Reject and Request changes (Action.Execute)', async () => {
    const started = Date.now();
    const approval = await requestApproval();
    const posted = await postedFor(approval.id);
    // The figure of docs/members-and-channels.md: from creation to the card at the connector, at low load.
    console.log(`teams: creation to post ${posted.at - started} ms`);
    expect(posted.conversationId).toBe(CHANNEL_ID);
    const card = posted.activity.attachments![0]!;
    expect(card.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(executes(card.content).map((action) => [action.verb, action.data])).toEqual([
      ['approve', { approvalId: approval.id, revision: 1 }],
      ['reject', { approvalId: approval.id, revision: 1 }],
      ['request_changes', { approvalId: approval.id, revision: 1 }],
    ]);
    expect(card.content.body.some((element) => element.type === 'Input.Text' && element.id === 'feedback')).toBe(true);
    expect(textOf(card.content)).toContain('billing-bot');
    const notice = await eventually(() =>
      env.services.db.approvalNotification.findFirst({ where: { approvalId: approval.id, channel: 'teams', status: 'sent' } }),
    );
    expect(notice).toMatchObject({ recipient: CHANNEL_ID, teamsConversationId: CHANNEL_ID, teamsActivityId: posted.activityId });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bot.calls.filter((call) => call.method === 'POST' && call.activityId === posted.activityId)).toHaveLength(1);
  });

  it('are not posted when the policy keeps Teams out', async () => {
    const kept = await requestApproval('no-teams');
    await eventually(
      async () =>
        (await env.services.db.consumerTask.count({ where: { orgId: org.orgId, consumer: 'teams-post', status: 'pending' } })) === 0,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bot.calls.filter((call) => JSON.stringify(call.activity).includes(kept.id))).toEqual([]);
  });
});

describe('POST /teams/messages', () => {
  it('answers 401 and changes nothing for a missing, forged, expired, wrong-audience, wrong-issuer or wrong-serviceUrl token', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const activity = cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id, revision: 1 }, aad.alice);
    const now = Math.floor(Date.now() / 1000);
    const tokens = [
      bot.token({}, { forged: true }),
      bot.token({ exp: now - 600, nbf: now - 1200, iat: now - 1200 }),
      bot.token({ aud: randomUUID() }),
      bot.token({ iss: 'https://sts.windows.net/evil/' }),
      bot.token({ serviceurl: 'https://evil.example/' }),
      bot.token({ aud: [APP_ID, 'other'] }),
    ];
    const answers = await Promise.all([
      env.http.post('/teams/messages').send(activity),
      env.http.post('/teams/messages').set('authorization', 'Basic abc').send(activity),
      ...tokens.map((token) => press(activity, token)),
      // A valid token, but the activity claims another service URL than the token names.
      press({ ...activity, serviceUrl: 'https://evil.example/' }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ code: 'unauthorized' });
    }
    expect((await status(approval.id)).status).toBe('pending');
  });

  it('refuses an activity from a tenant that did not connect the bot', async () => {
    const approval = await requestApproval();
    const answer = await press(cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id }, aad.alice, randomUUID()));
    expect(answer.status).toBe(401);
    expect((await status(approval.id)).status).toBe('pending');
  });

  it('approves as the linked member through the one vote function and replaces the card for everyone', async () => {
    const approval = await requestApproval();
    const posted = await postedFor(approval.id);
    const answer = await press(
      cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id, revision: 1, feedback: '' }, aad.alice),
    ).expect(200);
    expect(answer.body).toMatchObject({ statusCode: 200, type: 'application/vnd.microsoft.card.adaptive' });
    expect(executes(answer.body.value)).toEqual([]);
    const decided = await status(approval.id);
    expect(decided).toMatchObject({ status: 'approved', decidedBy: { type: 'user', id: alice.id, email: 'alice@acme.test' } });
    const votes = await env.services.db.approvalVote.findMany({ where: { approvalId: approval.id } });
    expect(votes.map((vote) => vote.channel)).toEqual(['teams']);
    const replaced = await eventually(() =>
      bot
        .cardsOf(posted.activityId)
        .slice(1)
        .find((card) => executes(card).length === 0),
    );
    expect(textOf(replaced)).toContain('Approved by alice@acme.test');
  });

  it('replaces the card with the outcome after a settlement elsewhere (the API)', async () => {
    const approval = await requestApproval();
    const posted = await postedFor(approval.id);
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'rejected', feedback: 'not now' }).expect(200);
    const replaced = await eventually(() => bot.cardsOf(posted.activityId).find((card) => executes(card).length === 0));
    expect(replaced.actions!.map((action) => action.type)).toEqual(['Action.OpenUrl']);
    expect(textOf(replaced)).toContain('Rejected by API key');
    expect(textOf(replaced)).toContain('Feedback: not now');
    // Pressing the old card now decides nothing.
    const late = await press(cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id, revision: 1 }, aad.alice)).expect(200);
    expect(textOf(late.body.value)).toContain('only pending approvals can be decided');
    expect((await status(approval.id)).status).toBe('rejected');
  });

  it('refuses a viewer, self-approval and a policy that keeps Teams out, on the card, changing nothing', async () => {
    const forViewer = await requestApproval();
    const mine = await requestApproval('refunds', { onBehalfOf: 'alice@acme.test' });
    const kept = await requestApproval('no-teams');
    const cases = [
      [forViewer.id, aad.vic, 'not among the reviewers'],
      [mine.id, aad.alice, 'self-approval'],
      [kept.id, aad.alice, 'does not allow decisions through teams'],
    ] as const;
    for (const [id, who, refusal] of cases) {
      const answer = await press(cardAction(bot.serviceUrl, 'approve', { approvalId: id, revision: 1 }, who)).expect(200);
      expect(textOf(answer.body.value)).toContain(refusal);
      expect(executes(answer.body.value)).toHaveLength(3);
      expect((await status(id)).status).toBe('pending');
    }
  });

  it('gives an unlinked Teams user a one-time link; once followed signed in, their press decides', async () => {
    const approval = await requestApproval();
    const answer = await press(cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id, revision: 1 }, aad.bob)).expect(200);
    const link = answer.body.value.actions.find((action: { title: string }) => action.title === 'Link my Teams account');
    expect(link.url).toMatch(/^https:\/\/gate\.acme\.test\/console\/link-teams\/[A-Za-z0-9_-]{40,}$/);
    expect((await status(approval.id)).status).toBe('pending');
    const token = link.url.split('/').pop();
    await bob.request('post', '/v1/session/teams-link').send({ token }).expect(204);
    await alice.request('post', '/v1/session/teams-link').send({ token }).expect(410);
    const members = (await org.request('get', '/v1/members').expect(200)).body.members as { id: string; teamsLinked: boolean }[];
    expect(members.find((member) => member.id === bob.id)!.teamsLinked).toBe(true);
    // Another member cannot take an identity that is linked already.
    await org
      .request('patch', `/v1/members/${alice.id}`)
      .send({ teams: { aadObjectId: aad.bob } })
      .expect(409);

    await press(cardAction(bot.serviceUrl, 'reject', { approvalId: approval.id, revision: 1, feedback: 'too much' }, aad.bob)).expect(200);
    expect(await status(approval.id)).toMatchObject({ status: 'rejected', feedback: 'too much', decidedBy: { id: bob.id } });
  });

  it('asks for feedback before requesting changes, then requests them', async () => {
    const approval = await requestApproval();
    const empty = await press(
      cardAction(bot.serviceUrl, 'request_changes', { approvalId: approval.id, revision: 1, feedback: '  ' }, aad.alice),
    ).expect(200);
    expect(textOf(empty.body.value)).toContain('Say what should change');
    expect((await status(approval.id)).status).toBe('pending');
    await press(
      cardAction(bot.serviceUrl, 'request_changes', { approvalId: approval.id, revision: 1, feedback: 'refund 100' }, aad.alice),
    ).expect(200);
    expect(await status(approval.id)).toMatchObject({ status: 'changes_requested', feedback: 'refund 100' });
  });

  it('lets one decision win when Teams, the console and the API press at once', async () => {
    const approval = await requestApproval();
    const answers = await Promise.all([
      press(cardAction(bot.serviceUrl, 'approve', { approvalId: approval.id, revision: 1 }, aad.alice)),
      bob.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'rejected' }),
      org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }),
    ]);
    const final = await status(approval.id);
    expect(final.status).not.toBe('pending');
    const votes = await env.services.db.approvalVote.findMany({ where: { approvalId: approval.id } });
    expect(votes).toHaveLength(1);
    for (const answer of answers.slice(1)) expect([200, 409]).toContain(answer.status);
    expect(answers.slice(1).filter((answer) => answer.status === 200).length + (votes[0]!.channel === 'teams' ? 1 : 0)).toBe(1);
  });

  it('acknowledges activities it does not act on once verified', async () => {
    await env.http
      .post('/teams/messages')
      .set('authorization', `Bearer ${bot.token()}`)
      .send({ type: 'conversationUpdate', serviceUrl: bot.serviceUrl, channelData: { tenant: { id: TENANT_ID } } })
      .expect(200);
  });
});
