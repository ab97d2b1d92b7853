import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshApprovalMessage } from '../src/modules/slack/slack-calls.js';
import { isFreshSlackTimestamp } from '../src/modules/slack/slack-signature.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain } from './support/audit-chain.js';
import { confirmLink, nonceOf, pathOf } from './support/decision-links.js';
import { eventually } from './support/eventually.js';
import { createMember, type TestMember } from './support/members.js';
import {
  buttonPress,
  modalSubmission,
  signedInteraction,
  SLACK_CHANNEL_ID,
  SLACK_TEAM_ID,
  startSlackApi,
  type SlackApi,
  type SlackCall,
} from './support/slack-api.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const SIGNING_SECRET = 'a3f1c9e0b7d24e5f8a6b1c2d3e4f5a6b';
const BOT_TOKEN = 'xoxb-1234-5678-acmeBotToken';
const secretsKey = () => randomBytes(32).toString('base64');

let slack: SlackApi;
let receiver: Receiver;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let alice: TestMember;
let bob: TestMember;
let carol: TestMember;
let vic: TestMember;

const linkSlack = (member: TestMember, userId: string) =>
  org
    .request('patch', `/v1/members/${member.id}`)
    .send({ slack: { teamId: SLACK_TEAM_ID, userId } })
    .expect(200);

beforeAll(async () => {
  slack = await startSlackApi();
  receiver = await startReceiver();
  env = await createTestEnv({
    SLACK_API_URL: slack.url,
    SECRETS_ENCRYPTION_KEY: secretsKey(),
    SLACK_MESSAGE_INTERVAL_MS: '20',
    OUTBOX_POLL_INTERVAL_MS: '100',
    PUBLIC_URL: 'https://gate.acme.test',
    WEBHOOK_BACKOFF_SCALE: '0.001',
  });
  org = await env.createOrg();
  [alice, bob, carol, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  await linkSlack(bob, 'U0BOB');
  await linkSlack(vic, 'U0VIC');
  await linkSlack(carol, 'U0CAROL');
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  await org.request('put', '/v1/policies/two-eyes').send({ quorum: 2 }).expect(200);
  await org.request('put', '/v1/policies/brief').send({ timeoutSeconds: 1 }).expect(200);
  await org
    .request('put', '/v1/policies/in-turn')
    .send({
      stages: [
        { name: 'Team lead', reviewers: { members: ['bob@acme.test'] } },
        { name: 'Finance', reviewers: { members: ['carol@acme.test'] } },
      ],
    })
    .expect(200);
  await org
    .request('put', '/v1/policies/no-chat')
    .send({ channels: ['api', 'console', 'email'] })
    .expect(200);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url('/hooks'), events: ['approval.approved', 'approval.rejected'] })
    .expect(201);
  await org
    .request('put', '/v1/integrations/slack')
    .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: '#approvals' })
    .expect(200);
  worker = await startWorkerRuntime(env.services, [
    'outbox-relay',
    'slack-post',
    'slack-update',
    'slack-ephemeral',
    'approval-expiry',
    'webhook-delivery',
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await slack?.close();
  await receiver?.close();
});

async function requestApproval(policyKey = 'refunds', extra: { onBehalfOf?: string; payload?: Record<string, unknown> } = {}) {
  return (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 120 }, policyKey, agent: 'billing-bot', ...extra })
      .expect(201)
  ).body as { id: string; status: string };
}

const buttonsOf = (call: SlackCall) =>
  (call.args.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).filter((block) => block.type === 'actions');
const textOf = (call: SlackCall) => JSON.stringify(call.args.blocks);

/** The message posted for an approval (waits for it). */
function postedFor(approvalId: string): Promise<SlackCall> {
  return eventually(() =>
    slack
      .of('chat.postMessage')
      .find((call) => buttonsOf(call).some((block) => block.elements!.some((button) => button.value === approvalId))),
  );
}

const updatesOf = (ts: string) => slack.of('chat.update').filter((call) => call.args.ts === ts);

/** Waits until the approval's message was last rewritten to show `text` without buttons. */
async function settledMessage(approvalId: string, text: string): Promise<SlackCall> {
  await postedFor(approvalId);
  return eventually(async () => {
    const ts = (await env.services.notifications.postedSlackMessages(approvalId))[0]?.slackTs;
    const last = ts ? updatesOf(ts).at(-1) : undefined;
    return last && buttonsOf(last).length === 0 && textOf(last).includes(text) ? last : null;
  });
}

function interact(payload: unknown, { secret = SIGNING_SECRET, timestamp }: { secret?: string; timestamp?: number } = {}) {
  const { body, headers } = signedInteraction(secret, payload, timestamp);
  return env.http.post('/slack/interactions').set(headers).send(body);
}

const status = async (id: string) => (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;

describe('PUT, GET and DELETE /v1/integrations/slack', () => {
  it('checks the bot token with auth.test, answers without secrets, stores them sealed and audits the change', async () => {
    const other = await env.createOrg();
    const put = await other
      .request('put', '/v1/integrations/slack')
      .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: 'C0OTHER' })
      .expect(200);
    expect(put.body).toEqual({ channel: 'C0OTHER', teamId: SLACK_TEAM_ID, connectedAt: expect.stringMatching(/Z$/) });
    expect(slack.of('auth.test').at(-1)!.token).toBe(BOT_TOKEN);
    expect((await other.request('get', '/v1/integrations/slack').expect(200)).body).toEqual(put.body);

    const row = await env.services.db.slackIntegration.findUniqueOrThrow({ where: { orgId: other.orgId } });
    expect(JSON.stringify(row)).not.toContain(BOT_TOKEN);
    expect(JSON.stringify(row)).not.toContain(SIGNING_SECRET);
    expect(row.botToken).toMatch(/^v1\.[0-9a-f]{8}\./);

    await other.request('delete', '/v1/integrations/slack').expect(204);
    await other.request('get', '/v1/integrations/slack').expect(404);
    await other.request('delete', '/v1/integrations/slack').expect(404);
    const chain = await readChain(env.services.db, other.orgId);
    const events = chain.filter((event) => event.type.startsWith('integration.'));
    expect(events.map((event) => [event.type, event.data])).toEqual([
      ['integration.updated', { integration: 'slack', teamId: SLACK_TEAM_ID, channel: 'C0OTHER' }],
      ['integration.removed', { integration: 'slack', teamId: SLACK_TEAM_ID, channel: 'C0OTHER' }],
    ]);
    expect(JSON.stringify(chain)).not.toContain(BOT_TOKEN);
  });

  it('answers 422 naming the field for a token Slack refuses and for bad input, 403 without the scope', async () => {
    const refused = await org
      .request('put', '/v1/integrations/slack')
      .send({ botToken: 'xoxb-revoked-token', signingSecret: SIGNING_SECRET, channel: '#approvals' })
      .expect(422);
    expect(refused.body.errors).toEqual([{ path: 'botToken', message: 'Slack refused the bot token: invalid_auth.' }]);
    const bad = await org
      .request('put', '/v1/integrations/slack')
      .send({ botToken: 'xoxp-user', signingSecret: 'short', channel: 'not a channel' })
      .expect(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['botToken', 'channel', 'signingSecret']);
    const reader = await env.createKey(org.orgId, ['integrations:read']);
    await env.http.put('/v1/integrations/slack').set('authorization', `Bearer ${reader.key}`).send({}).expect(403);
    await env.http.get('/v1/integrations/slack').set('authorization', `Bearer ${reader.key}`).expect(200);
    await vic.request('get', '/v1/integrations/slack').expect(403);
    // The connection in use is unchanged.
    expect((await org.request('get', '/v1/integrations/slack').expect(200)).body.channel).toBe('#approvals');
  });

  it('answers 503 when no key can seal the secrets, or Slack cannot be reached', async () => {
    const keyless = await createTestEnv({ SLACK_API_URL: slack.url });
    const unreachable = await createTestEnv({ SLACK_API_URL: 'http://127.0.0.1:9/api/', SECRETS_ENCRYPTION_KEY: secretsKey() });
    try {
      for (const [local, detail] of [
        [keyless, 'SECRETS_ENCRYPTION_KEY is not set'],
        [unreachable, 'Slack could not be reached'],
      ] as const) {
        const localOrg = await local.createOrg();
        const res = await localOrg
          .request('put', '/v1/integrations/slack')
          .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: '#x' })
          .expect(503);
        expect(res.body).toMatchObject({ code: 'unavailable', detail: expect.stringContaining(detail) });
      }
    } finally {
      await keyless.close();
      await unreachable.close();
    }
  });
});

describe('pending requests in Slack', () => {
  it('are posted to the channel with Approve, Reject and Request changes buttons carrying the approval id, once', async () => {
    const approval = await requestApproval();
    const posted = await postedFor(approval.id);
    expect(posted.token).toBe(BOT_TOKEN);
    expect(posted.args.channel).toBe('#approvals');
    expect(posted.args.text).toBe('Approval needed: refund');
    expect(buttonsOf(posted)[0]!.elements!.map((button) => [button.action_id, button.value])).toEqual([
      ['approve', approval.id],
      ['reject', approval.id],
      ['request_changes', approval.id],
    ]);
    expect(textOf(posted)).toContain('billing-bot');
    expect(textOf(posted)).toContain('refunds');
    expect(textOf(posted)).toContain('https://gate.acme.test/console/approvals/' + approval.id);
    const notice = await eventually(() =>
      env.services.db.approvalNotification.findFirst({ where: { approvalId: approval.id, status: 'sent' } }),
    );
    expect(notice).toMatchObject({ channel: 'slack', recipient: '#approvals', status: 'sent', slackChannelId: SLACK_CHANNEL_ID });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slack.of('chat.postMessage').filter((call) => textOf(call).includes(approval.id))).toHaveLength(1);
  });

  it('are not posted when the policy keeps Slack out, nor when the request was approved by its policy', async () => {
    const kept = await requestApproval('no-chat');
    await org.request('put', '/v1/policies/auto').send({ defaultOutcome: 'allow' }).expect(200);
    const auto = (await org.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, policyKey: 'auto' }).expect(200)).body;
    await eventually(
      async () =>
        (await env.services.db.outboxMessage.count({ where: { orgId: org.orgId, relayedAt: null } })) === 0 &&
        (await env.services.db.consumerTask.count({ where: { orgId: org.orgId, consumer: 'slack-post', status: 'pending' } })) === 0,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slack.of('chat.postMessage').filter((call) => textOf(call).includes(kept.id) || textOf(call).includes(auto.id))).toEqual([]);
  });
});

describe('stages of reviewers in Slack', () => {
  it('shows the current stage, follows the request to its next stage, and lets only that stage decide', async () => {
    const approval = await requestApproval('in-turn');
    const posted = await postedFor(approval.id);
    expect(textOf(posted)).toContain('*Stage:* 1 (Team lead)');
    const ts = await eventually(async () => (await env.services.notifications.postedSlackMessages(approval.id))[0]?.slackTs);

    // Carol decides stage 2 only: her press in stage 1 decides nothing.
    await interact(buttonPress('approve', approval.id, 'U0CAROL')).expect(200);
    await interact(buttonPress('approve', approval.id, 'U0BOB')).expect(200);
    const moved = await eventually(() => updatesOf(ts).find((call) => textOf(call).includes('*Stage:* 2 (Finance)')));
    expect(buttonsOf(moved)).toHaveLength(1);
    expect(await status(approval.id)).toMatchObject({ status: 'pending', stage: { index: 2, name: 'Finance' }, votes: [{ stage: 1 }] });

    await interact(buttonPress('approve', approval.id, 'U0CAROL')).expect(200);
    await settledMessage(approval.id, 'Approved by carol@acme.test');
    expect((await status(approval.id)).votes.map((vote: { stage: number }) => vote.stage)).toEqual([1, 2]);
  });
});

describe('POST /slack/interactions', () => {
  it('answers 401 and changes nothing for a bad signature, a stale or missing timestamp, or an unknown secret', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const press = buttonPress('approve', approval.id, 'U0BOB');
    const { body, headers } = signedInteraction(SIGNING_SECRET, press);
    const tampered = body.replace('U0BOB', 'U0CAROL');
    const attempts = [
      env.http.post('/slack/interactions').set(headers).send(tampered),
      env.http
        .post('/slack/interactions')
        .set({ ...headers, 'x-slack-signature': headers['x-slack-signature'].replace(/.$/, (c) => (c === '0' ? '1' : '0')) })
        .send(body),
      // Five seconds past the 300 s either way: a timestamp rounded down to the second and the time
      // the request takes to arrive must not carry it back inside (+301 did, on a slow machine).
      // The boundary itself is the next test's, against a clock it sets.
      interact(press, { timestamp: Math.floor(Date.now() / 1000) - 305 }),
      interact(press, { timestamp: Math.floor(Date.now() / 1000) + 305 }),
      interact(press, { secret: 'not-the-signing-secret' }),
      env.http.post('/slack/interactions').set('content-type', 'application/x-www-form-urlencoded').send(body),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
    expect(await status(approval.id)).toMatchObject({ status: 'pending', votes: [] });
    // Within the window and signed, the same press is taken.
    await interact(buttonPress('approve', approval.id, 'U0BOB'), { timestamp: Math.floor(Date.now() / 1000) - 290 }).expect(200);
    expect((await status(approval.id)).status).toBe('approved');
  });

  it('takes a timestamp up to 300 s from now either way, and nothing further or not a number', () => {
    const nowMs = 1_800_000_000_000;
    const fresh = (offsets: number[]) => offsets.map((offset) => isFreshSlackTimestamp(String(nowMs / 1000 + offset), nowMs));
    expect(fresh([-300, 0, 300])).toEqual([true, true, true]);
    expect(fresh([-301, 301])).toEqual([false, false]);
    const malformed = [undefined, '', 'soon', '1.8e9', '-1800000000', '1800000000.5'];
    expect(malformed.map((timestamp) => isFreshSlackTimestamp(timestamp, nowMs))).toEqual(malformed.map(() => false));
  });

  it('sends an unlinked user a single-use link to the console instead of deciding, never matching by email', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const before = slack.of('chat.postEphemeral').length;
    await interact(buttonPress('approve', approval.id, 'U0ALICE')).expect(200);
    const ephemeral = await eventually(() => slack.of('chat.postEphemeral')[before]);
    expect(ephemeral.args).toMatchObject({ channel: SLACK_CHANNEL_ID, user: 'U0ALICE' });
    const link = /https:\/\/gate\.acme\.test\/console\/link-slack\/([A-Za-z0-9_-]{43})/.exec(ephemeral.args.text as string);
    expect(link).not.toBeNull();
    expect((await status(approval.id)).status).toBe('pending');

    // Only a signed-in member may use it (no API key), once; then alice's Slack user decides as alice.
    await org.request('post', '/v1/session/slack-link').send({ token: link![1] }).expect(401);
    await alice.request('post', '/v1/session/slack-link').send({ token: link![1] }).expect(204);
    await alice.request('post', '/v1/session/slack-link').send({ token: link![1] }).expect(410);
    const members = (await org.request('get', '/v1/members').expect(200)).body.members as { id: string; slackLinked: boolean }[];
    expect(members.find((member) => member.id === alice.id)!.slackLinked).toBe(true);
    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.at(-1)).toMatchObject({
      type: 'member.updated',
      actor: JSON.stringify({ type: 'user', id: alice.id }),
      data: { memberId: alice.id, slackLinked: true },
    });

    await interact(buttonPress('approve', approval.id, 'U0ALICE')).expect(200);
    expect((await status(approval.id)).decidedBy).toEqual({ type: 'user', id: alice.id, email: alice.email });
    const [vote] = await env.services.db.approvalVote.findMany({ where: { approvalId: approval.id } });
    expect(vote!.channel).toBe('slack');
  });

  it('previews a link for the console without using it, with the refusals of linking, for a session with its CSRF token only', async () => {
    const issue = (userId: string) =>
      env.services.members.issueSlackLink(org.orgId, SLACK_TEAM_ID, userId).then((url) => url.split('/').pop()!);
    const dave = await createMember(env, org, 'reviewer');
    const token = await issue('U0DAVE');
    const preview = dave.request('post', '/v1/session/slack-link/preview');
    const shown = await preview.send({ token }).expect(200);
    expect(shown.body).toEqual({ teamId: SLACK_TEAM_ID, userId: 'U0DAVE', expiresAt: expect.stringMatching(/Z$/), linkedToYou: false });
    expect(Date.parse(shown.body.expiresAt) - Date.now()).toBeGreaterThan(14 * 60_000);
    await dave.request('post', '/v1/session/slack-link/preview').send({ token }).expect(200);

    // The session cookie alone (a form of another site) is refused, and so is an API key.
    for (const path of ['/v1/session/slack-link/preview', '/v1/session/slack-link']) {
      expect((await dave.agent.post(path).send({ token }).expect(403)).body.code).toBe('csrf_failed');
      await org.request('post', path).send({ token }).expect(401);
    }
    const bobs = await issue('U0BOB');
    expect((await carol.request('post', '/v1/session/slack-link/preview').send({ token: bobs }).expect(409)).body.code).toBe('conflict');
    expect((await bob.request('post', '/v1/session/slack-link/preview').send({ token: bobs }).expect(200)).body.linkedToYou).toBe(true);
    await carol
      .request('post', '/v1/session/slack-link/preview')
      .send({ token: 'x'.repeat(43) })
      .expect(410);
    await carol.request('post', '/v1/session/slack-link/preview').send({}).expect(422);

    await dave.request('post', '/v1/session/slack-link').send({ token }).expect(204);
    await dave.request('post', '/v1/session/slack-link/preview').send({ token }).expect(410);
  });

  it('refuses an expired link token, one of another organization, and an identity another member holds', async () => {
    const issue = (userId: string, orgId = org.orgId) =>
      env.services.members.issueSlackLink(orgId, SLACK_TEAM_ID, userId).then((url) => url.split('/').pop()!);
    const expired = await issue('U0LATE');
    await env.services.db.slackLinkToken.updateMany({ where: { userId: 'U0LATE' }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await carol.request('post', '/v1/session/slack-link').send({ token: expired }).expect(410);
    const elsewhere = await issue('U0ELSE', (await env.createOrg()).orgId);
    await carol.request('post', '/v1/session/slack-link').send({ token: elsewhere }).expect(410);
    const taken = await issue('U0BOB');
    const res = await carol.request('post', '/v1/session/slack-link').send({ token: taken }).expect(409);
    expect(res.body.detail).toContain('linked to another member');
    await carol.request('post', '/v1/session/slack-link').send({}).expect(422);
  });

  it('tells a linked member who may not decide why, privately, and changes nothing', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const before = slack.of('chat.postEphemeral').length;
    await interact(buttonPress('approve', approval.id, 'U0VIC')).expect(200);
    await interact(buttonPress('reject', approval.id, 'U0VIC')).expect(200);
    const told = await eventually(() =>
      slack.of('chat.postEphemeral').length >= before + 2 ? slack.of('chat.postEphemeral').slice(before) : null,
    );
    for (const ephemeral of told) {
      expect(ephemeral.args.user).toBe('U0VIC');
      expect(ephemeral.args.text).toContain('You are not among the reviewers the policy');
    }
    expect(slack.of('views.open').filter((call) => call.args.trigger_id.startsWith('trigger-U0VIC'))).toEqual([]);
    expect(await status(approval.id)).toMatchObject({ status: 'pending', votes: [] });
  });

  it('refuses self-approval and a channel the policy leaves out, each with its own reason, privately', async () => {
    const own = await requestApproval('refunds', { onBehalfOf: bob.email });
    const kept = await requestApproval('no-chat');
    const before = slack.of('chat.postEphemeral').length;
    await interact(buttonPress('approve', own.id, 'U0BOB')).expect(200);
    const selfRefusal = await eventually(() => slack.of('chat.postEphemeral')[before]);
    expect(selfRefusal.args.text).toContain('another reviewer must decide it');
    await interact(buttonPress('reject', kept.id, 'U0CAROL')).expect(200);
    const channelRefusal = await eventually(() => slack.of('chat.postEphemeral')[before + 1]);
    expect(channelRefusal.args).toMatchObject({ user: 'U0CAROL' });
    expect(channelRefusal.args.text).toContain('does not allow decisions through slack; decide it through api or console or email');
    expect((await status(own.id)).votes).toEqual([]);
    expect((await status(kept.id)).votes).toEqual([]);
  });

  it('rejects through the modal: Reject opens it, its submission decides with the feedback', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const press = buttonPress('reject', approval.id, 'U0BOB');
    await interact(press).expect(200);
    const opened = slack.of('views.open').find((call) => call.args.trigger_id === press.trigger_id)!;
    expect(opened.token).toBe(BOT_TOKEN);
    expect(opened.args.view).toMatchObject({ type: 'modal', callback_id: 'reject-feedback' });
    expect((await status(approval.id)).status).toBe('pending');

    await interact(modalSubmission(opened.args.view, 'U0BOB', 'Not before the audit.')).expect(200, '');
    expect(await status(approval.id)).toMatchObject({
      status: 'rejected',
      feedback: 'Not before the audit.',
      decidedBy: { type: 'user', id: bob.id, email: bob.email },
    });
    const update = await settledMessage(approval.id, `Rejected by ${bob.email}`);
    expect(textOf(update)).toContain('Not before the audit.');

    // Submitted again, the modal shows why nothing changed.
    const again = await interact(modalSubmission(opened.args.view, 'U0BOB', 'twice')).expect(200);
    expect(again.body).toEqual({ response_action: 'errors', errors: { feedback: expect.stringContaining('is rejected') } });
  });
});

describe('requests for changes in Slack', () => {
  const postsFor = (approvalId: string) =>
    slack
      .of('chat.postMessage')
      .filter((call) => buttonsOf(call).some((block) => block.elements!.some((button) => button.value === approvalId)));

  it('Request changes opens a modal that requires the feedback; its submission asks for the changes, escaped in the message', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const press = buttonPress('request_changes', approval.id, 'U0BOB');
    await interact(press).expect(200);
    const opened = await eventually(() => slack.of('views.open').find((call) => call.args.trigger_id === press.trigger_id));
    expect(opened.token).toBe(BOT_TOKEN);
    expect(opened.args.view).toMatchObject({ type: 'modal', callback_id: 'changes-feedback', submit: { text: 'Request changes' } });
    const input = opened.args.view.blocks.find((block: { type: string }) => block.type === 'input');
    expect(input).toMatchObject({ optional: false, element: { max_length: 2000 } });
    expect(JSON.parse(opened.args.view.private_metadata)).toMatchObject({ approvalId: approval.id, revision: 1 });

    // Empty or too long: the modal says why, nothing changes.
    const empty = await interact(modalSubmission(opened.args.view, 'U0BOB', '  ')).expect(200);
    expect(empty.body).toEqual({ response_action: 'errors', errors: { feedback: expect.stringContaining('Say what should change') } });
    const long = await interact(modalSubmission(opened.args.view, 'U0BOB', 'x'.repeat(2001))).expect(200);
    expect(long.body).toEqual({ response_action: 'errors', errors: { feedback: expect.stringContaining('at most 2000 characters') } });
    expect(await status(approval.id)).toMatchObject({ status: 'pending', votes: [] });

    await interact(modalSubmission(opened.args.view, 'U0BOB', 'Refund <100> & keep the fee')).expect(200, '');
    expect(await status(approval.id)).toMatchObject({
      status: 'changes_requested',
      feedback: 'Refund <100> & keep the fee',
      decidedBy: { type: 'user', id: bob.id, email: bob.email },
    });
    const update = await settledMessage(approval.id, `Changes requested by ${bob.email}`);
    expect(textOf(update)).toContain('Refund &lt;100&gt; &amp; keep the fee');
    expect(textOf(update)).not.toContain('<100>');

    // A later press, on any button, is answered as every settled press is: privately, no modal, nothing changed.
    const before = slack.of('chat.postEphemeral').length;
    const late = buttonPress('request_changes', approval.id, 'U0CAROL');
    await interact(late).expect(200);
    const told = await eventually(() => slack.of('chat.postEphemeral')[before]);
    expect(told.args).toMatchObject({ user: 'U0CAROL' });
    expect(told.args.text).toContain('was settled by another decision');
    expect(slack.of('views.open').filter((call) => call.args.trigger_id === late.trigger_id)).toEqual([]);
    const again = await interact(modalSubmission(opened.args.view, 'U0BOB', 'twice')).expect(200);
    expect(again.body).toEqual({ response_action: 'errors', errors: { feedback: expect.stringContaining('is changes_requested') } });
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(1);
  });

  it('many submissions of a request for changes racing Approve presses settle the request once', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const press = buttonPress('request_changes', approval.id, 'U0BOB');
    await interact(press).expect(200);
    const opened = await eventually(() => slack.of('views.open').find((call) => call.args.trigger_id === press.trigger_id));
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2
          ? interact(modalSubmission(opened.args.view, 'U0BOB', `change ${i}`))
          : interact(buttonPress('approve', approval.id, 'U0CAROL', SLACK_TEAM_ID, 'decision:1')),
      ),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(1);
    const settled = await status(approval.id);
    expect(['approved', 'changes_requested']).toContain(settled.status);
    // The modal submissions that lost say why in the modal; the winner's answer is empty.
    const modalAnswers = answers.filter((_, i) => i % 2).map((answer) => answer.body);
    const won = modalAnswers.filter((body) => body === '' || (typeof body === 'object' && Object.keys(body).length === 0));
    expect(won.length).toBe(settled.status === 'changes_requested' ? 1 : 0);
  });

  it('a revision is posted anew, saying "revision N" and listing the changed fields; a modal of the earlier revision decides nothing', async () => {
    const approval = await requestApproval('refunds', { payload: { amount: 120, to: { iban: 'DE01', name: 'Ada' } } });
    await postedFor(approval.id);
    // Carol opens the reject modal on revision 1 and submits it only after the revision.
    const press = buttonPress('reject', approval.id, 'U0CAROL');
    await interact(press).expect(200);
    const stale = await eventually(() => slack.of('views.open').find((call) => call.args.trigger_id === press.trigger_id));

    await bob
      .request('post', `/v1/approvals/${approval.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Refund 100, to <the> new IBAN' })
      .expect(200);
    await settledMessage(approval.id, `Changes requested by ${bob.email}`);
    await org
      .request('post', `/v1/approvals/${approval.id}/revisions`)
      .send({ payload: { amount: 100, to: { iban: 'DE02', name: 'Ada' }, memo: 'partial' }, note: 'Refund 100 & new IBAN' })
      .expect(201);

    const revised = await eventually(() => (postsFor(approval.id).length === 2 ? postsFor(approval.id)[1] : null));
    expect(revised.args.text).toBe('Approval needed: refund (revision 2)');
    expect(textOf(revised)).toContain('*Revision 2* · *Changed fields:* amount, memo, to.iban');
    expect(textOf(revised)).toContain(`*Changes asked by ${bob.email}:* Refund 100, to &lt;the&gt; new IBAN`);
    expect(textOf(revised)).toContain("*Agent's note:* Refund 100 &amp; new IBAN");
    expect(buttonsOf(revised)[0]!.elements!.map((button) => button.action_id)).toEqual(['approve', 'reject', 'request_changes']);

    expect(buttonsOf(revised)[0]).toMatchObject({ block_id: 'decision:2' });
    // An update of the first revision's message that lands after the revision (a late job) shows how revision 1 ended, without buttons.
    const [first] = await env.services.notifications.postedSlackMessages(approval.id, 1);
    expect(first).toMatchObject({ revision: 1 });
    const connection = (await env.services.slack.connection(org.orgId))!;
    await refreshApprovalMessage(env.services, connection, approval.id, first!, null);
    const late = updatesOf(first!.slackTs).at(-1)!;
    expect(buttonsOf(late)).toHaveLength(0);
    expect(textOf(late)).toContain(`*Changes requested by ${bob.email}:* Refund 100, to &lt;the&gt; new IBAN`);
    expect(textOf(late)).toContain('The agent sent revision 2, posted as a new message.');
    // A press on the first revision's message (as Slack would send it before the message was rewritten) decides nothing.
    const before = slack.of('chat.postEphemeral').length;
    await interact(buttonPress('approve', approval.id, 'U0CAROL', SLACK_TEAM_ID, 'decision:1')).expect(200);
    const told = await eventually(() => slack.of('chat.postEphemeral')[before]);
    expect(told.args.text).toContain('This message is about revision 1; the request was revised since (revision 2)');
    const refused = await interact(modalSubmission(stale.args.view, 'U0CAROL', 'stale')).expect(200);
    expect(refused.body).toMatchObject({ response_action: 'errors' });
    expect(await status(approval.id)).toMatchObject({ status: 'pending', revision: 2, votes: [] });

    // A vote on the revision updates the revision's message, which keeps saying what changed.
    await carol.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const ts = await eventually(async () => (await env.services.notifications.postedSlackMessages(approval.id))[0]?.slackTs);
    const settled = await eventually(() => {
      const last = updatesOf(ts).at(-1);
      return last && textOf(last).includes(`Approved by ${carol.email}`) ? last : null;
    });
    expect(textOf(settled)).toContain('*Changed fields:* amount, memo, to.iban');
    expect(buttonsOf(settled)).toHaveLength(0);
  });
});

describe('every message posted for an approval follows it', () => {
  it('after a decision through the API, with the outcome, who decided and when, without buttons', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const update = await settledMessage(approval.id, `Approved by API key ${org.reviewerKeyId}`);
    expect(update.args.channel).toBe(SLACK_CHANNEL_ID);
    expect(update.args.text).toContain('Approved by');
  });

  it('after a vote under quorum, and then after the settlement', async () => {
    const approval = await requestApproval('two-eyes');
    const posted = await postedFor(approval.id);
    expect(textOf(posted)).toContain('Approvals needed:* 2');
    await carol.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const voted = await eventually(async () => {
      const ts = (await env.services.notifications.postedSlackMessages(approval.id))[0]?.slackTs;
      return ts ? updatesOf(ts).find((call) => textOf(call).includes('1 of 2 approvals so far')) : undefined;
    });
    expect(buttonsOf(voted)).toHaveLength(1);
    await bob.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    await settledMessage(approval.id, `Approved by ${bob.email}`);
  });

  it('after a request for changes; the revision is posted anew, and only its message follows the decision', async () => {
    const approval = await requestApproval();
    const first = await postedFor(approval.id);
    await org
      .asReviewer('post', `/v1/approvals/${approval.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Only 100.' })
      .expect(200);
    await settledMessage(approval.id, `Changes requested by API key ${org.reviewerKeyId}`);
    await org
      .request('post', `/v1/approvals/${approval.id}/revisions`)
      .send({ payload: { amount: 100 } })
      .expect(201);
    const second = await eventually(() => {
      const posts = slack
        .of('chat.postMessage')
        .filter((call) => buttonsOf(call).some((block) => block.elements!.some((button) => button.value === approval.id)));
      return posts.length === 2 ? posts[1] : undefined;
    });
    expect(second).not.toBe(first);
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const [message] = await env.services.notifications.postedSlackMessages(approval.id);
    await eventually(() => {
      const last = updatesOf(message!.slackTs).at(-1);
      return last && buttonsOf(last).length === 0 && textOf(last).includes('Approved by') ? last : null;
    });
    // The first revision's message still says how that revision ended.
    const firstTs = (await env.services.notifications.postedSlackMessages(approval.id, 1))[0]!.slackTs;
    expect(firstTs).not.toBe(message!.slackTs);
    expect(textOf(updatesOf(firstTs).at(-1)!)).toContain('Changes requested');
  });

  it('after the request expired', async () => {
    const approval = await requestApproval('brief');
    await postedFor(approval.id);
    await settledMessage(approval.id, 'Expired: nobody decided it in time.');
  });

  it('after a decision through an email link', async () => {
    const approval = await requestApproval();
    await postedFor(approval.id);
    const view = (await status(approval.id)) as { id: string; expiresAt: string; revision: number };
    const links = await env.services.decisionLinks.issue(org.orgId, view, carol.id);
    expect((await confirmLink(env, links.reject, 'too much')).status).toBe(200);
    await settledMessage(approval.id, `Rejected by ${carol.email}`);
  });
});

describe('Slack text is escaped everywhere it goes', () => {
  const INJECTIONS = '<!channel> <!here> <@U0BOSS> <http://evil.test|Your bank> & co';
  /** Every text of a call: the fallback and each text of its blocks, of any type. */
  const textsOf = (call: SlackCall): string[] => {
    const found: string[] = [String(call.args.text)];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'text' && typeof value === 'string') found.push(value);
          else walk(value);
        }
      }
    };
    walk(call.args.blocks);
    return found;
  };
  /** What is left of a text once our own control sequences (the date token, the console link) are taken out. */
  const foreign = (text: string) =>
    text
      .replace(/<!date\^\d+\^\{date_short_pretty\} \{time\}\|[^<>]+>/g, '')
      .replace(/<https:\/\/gate\.acme\.test\/console\/approvals\/[0-9a-f-]{36}\|Open in console>/g, '');
  const expectEscaped = (call: SlackCall) => {
    for (const text of textsOf(call)) {
      expect(foreign(text)).not.toMatch(/[<>]/);
      expect(foreign(text)).not.toMatch(/&(?!amp;|lt;|gt;)/);
    }
  };

  it('in the posted message, its text fallback and every chat.update, whatever the request, payload or feedback hold', async () => {
    const approval = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: `refund ${INJECTIONS}`, payload: { note: INJECTIONS }, policyKey: 'refunds', agent: `bot ${INJECTIONS}` })
        .expect(201)
    ).body as { id: string };
    const posted = await postedFor(approval.id);
    expect(posted.args.text).toBe(
      'Approval needed: refund &lt;!channel&gt; &lt;!here&gt; &lt;@U0BOSS&gt; &lt;http://evil.test|Your bank&gt; &amp; co',
    );
    expectEscaped(posted);

    await bob
      .request('post', `/v1/approvals/${approval.id}/decision`)
      .send({ verdict: 'rejected', feedback: `No. ${INJECTIONS}` })
      .expect(200);
    const update = await settledMessage(approval.id, `Rejected by ${bob.email}`);
    expect(update.args.text).toContain('Feedback: No. &lt;!channel&gt; &lt;!here&gt; &lt;@U0BOSS&gt;');
    expect(update.args.text).toContain('refund &lt;!channel&gt;');
    expect(textOf(update)).toContain('No. &lt;!channel&gt;');
    const ts = (await env.services.notifications.postedSlackMessages(approval.id))[0]!.slackTs;
    for (const call of updatesOf(ts)) expectEscaped(call);
  });

  it('cuts a long header after escaping, never inside an entity', async () => {
    const approval = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: `${'a'.repeat(130)}${'<&>'.repeat(20)}`, payload: {}, policyKey: 'refunds' })
        .expect(201)
    ).body as { id: string };
    const posted = await postedFor(approval.id);
    const header = (posted.args.blocks as { type: string; text: { text: string } }[]).find((block) => block.type === 'header')!.text.text;
    expect(header.length).toBeLessThanOrEqual(150);
    expect(header).toMatch(/^Approval needed: a{130}(&lt;&amp;&gt;)*(&lt;|&lt;&amp;)?$/);
    expectEscaped(posted);
  });

  it('in the reject modal and in what a reviewer is told privately', async () => {
    const approval = (
      await org.request('post', '/v1/approvals').send({ action: INJECTIONS, payload: {}, policyKey: 'refunds' }).expect(201)
    ).body as { id: string };
    await postedFor(approval.id);
    const press = buttonPress('reject', approval.id, 'U0BOB');
    await interact(press).expect(200);
    const opened = slack.of('views.open').find((call) => call.args.trigger_id === press.trigger_id)!;
    expectEscaped({ ...opened, args: { text: '', blocks: opened.args.view.blocks } });
    await bob.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const before = slack.of('chat.postEphemeral').length;
    await interact(buttonPress('approve', approval.id, 'U0CAROL')).expect(200);
    const told = await eventually(() => slack.of('chat.postEphemeral')[before]);
    expect(told.args.text).not.toMatch(/[<>]/);
  });
});

describe('Slack’s limits', () => {
  it('honours a 429’s Retry-After and retries a 5xx, posting once', async () => {
    const callsFor = (id: string) => slack.of('chat.postMessage').filter((call) => textOf(call).includes(id));
    for (const failure of [
      { status: 429, headers: { 'retry-after': '1' }, body: { ok: false, error: 'ratelimited' } },
      { status: 503, body: 'upstream unavailable' },
    ]) {
      let failed = false;
      slack.respond('chat.postMessage', () => (failed ? undefined : ((failed = true), failure)));
      try {
        const approval = await requestApproval();
        const [refused, posted] = await eventually(() => (callsFor(approval.id).length === 2 ? callsFor(approval.id) : null), 15_000);
        if (failure.status === 429) expect(posted!.at - refused!.at).toBeGreaterThanOrEqual(1000);
        const notice = await eventually(() =>
          env.services.db.approvalNotification.findFirst({ where: { approvalId: approval.id, status: 'sent' } }),
        );
        expect(notice.attempts).toBe(2);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(callsFor(approval.id)).toHaveLength(2);
      } finally {
        slack.reset('chat.postMessage');
      }
    }
  });
});

describe('one approval decided at the same moment in the console, by a link and in Slack', () => {
  it('is decided once, delivered as one webhook, and every surface shows the one outcome', async () => {
    for (let round = 0; round < 3; round++) {
      const approval = await requestApproval();
      await postedFor(approval.id);
      const view = (await status(approval.id)) as { id: string; expiresAt: string; revision: number };
      const links = await env.services.decisionLinks.issue(org.orgId, view, carol.id);
      const page = await env.http.get(pathOf(links.approve)).expect(200);

      const [console_, link, slackPress] = await Promise.all([
        alice.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }),
        env.http
          .post(pathOf(links.approve))
          .type('form')
          .send({ nonce: nonceOf(page.text) }),
        interact(buttonPress('approve', approval.id, 'U0BOB')),
      ]);
      expect(slackPress.status).toBe(200);
      const winners = [console_.status === 200, link.status === 200].filter(Boolean).length;
      const settled = await status(approval.id);
      expect(settled.status).toBe('approved');
      expect(settled.votes).toHaveLength(1);
      const decider = settled.decidedBy as { id: string; email: string };
      // Slack's press answers 200 either way: it won when neither the console nor the link did.
      expect(winners + (decider.id === bob.id ? 1 : 0)).toBe(1);
      if (console_.status !== 200) expect(console_.status).toBe(409);
      if (link.status !== 200) expect(link.status).toBe(409);

      await receiver.waitFor((deliveries) => deliveries.some((delivery) => delivery.body.data.approvalId === approval.id));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.received.filter((delivery) => delivery.body.data.approvalId === approval.id)).toHaveLength(1);
      expect(
        await env.services.db.outboxMessage.count({
          where: { orgId: org.orgId, eventType: 'approval.approved', body: { path: ['data', 'approvalId'], equals: approval.id } },
        }),
      ).toBe(1);

      const shown = await env.http.get(pathOf(links.reject)).expect(200);
      expect(shown.text).toContain(`Approved by ${decider.email}`);
      expect((await alice.request('get', `/v1/approvals/${approval.id}`).expect(200)).body.decidedBy).toEqual(settled.decidedBy);
      await settledMessage(approval.id, `Approved by ${decider.email}`);
      if (decider.id !== bob.id) {
        await eventually(() =>
          slack.of('chat.postEphemeral').some((call) => call.args.user === 'U0BOB' && String(call.args.text).includes(approval.id)),
        );
      }
    }
  }, 120_000);
});

describe('the Redis limiter', () => {
  it('spaces the messages of one channel by SLACK_MESSAGE_INTERVAL_MS across workers', async () => {
    const local = await createTestEnv({
      SLACK_API_URL: slack.url,
      SECRETS_ENCRYPTION_KEY: secretsKey(),
      OUTBOX_POLL_INTERVAL_MS: '100',
      SLACK_MESSAGE_INTERVAL_MS: '500',
    });
    const runtimes: WorkerRuntime[] = [];
    try {
      const localOrg = await local.createOrg();
      await createMember(local, localOrg, 'reviewer');
      await localOrg
        .request('put', '/v1/integrations/slack')
        .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: '#limited' })
        .expect(200);
      const peer = await local.createPeer();
      runtimes.push(
        await startWorkerRuntime(local.services, ['outbox-relay', 'slack-post']),
        await startWorkerRuntime(peer.services, ['slack-post']),
      );
      const ids = [];
      for (let i = 0; i < 4; i++)
        ids.push(
          (await localOrg.request('post', '/v1/approvals').send({ action: 'refund', payload: { i }, policyKey: 'none' }).expect(201)).body
            .id,
        );
      const posts = await eventually(() => {
        const mine = slack.of('chat.postMessage').filter((call) => call.args.channel === '#limited');
        return mine.length === 4 ? mine : null;
      }, 20_000);
      const times = posts.map((call) => call.at).sort((a, b) => a - b);
      // The limiter spaces its grants by 500 ms; what the stand-in sees is their arrival, which a loaded
      // machine delays by up to a few hundred ms each. Unthrottled, the four arrive together.
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(250);
      expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(3 * 450);
    } finally {
      for (const runtime of runtimes) await runtime.stop();
      await local.close();
    }
  }, 120_000);
});
