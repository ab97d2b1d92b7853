import { randomBytes, randomUUID } from 'node:crypto';
import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalReminderJob } from '../src/jobs/approval-reminder.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createMember, type TestMember } from './support/members.js';
import { startPushService, type PushServiceStandIn } from './support/push-service.js';
import { APP_ID, APP_SECRET, CHANNEL_ID, TEAM_ID, TENANT_ID, startBotFramework, type BotFramework } from './support/bot-framework.js';
import { SLACK_TEAM_ID, startSlackApi, type SlackApi } from './support/slack-api.js';
import { startSmtpServer, type SmtpServer } from './support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const vapid = webpush.generateVAPIDKeys();
let smtp: SmtpServer;
let pushService: PushServiceStandIn;
let slack: SlackApi;
let bot: BotFramework;
let env: TestEnv;
let org: TestOrg;
const workers: WorkerRuntime[] = [];
let alice: TestMember;
let bob: TestMember;
let carol: TestMember;
let vic: TestMember;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  [smtp, pushService, slack, bot] = await Promise.all([startSmtpServer(), startPushService(), startSlackApi(), startBotFramework()]);
  env = await createTestEnv({
    SMTP_URL: smtp.url,
    SLACK_API_URL: slack.url,
    TEAMS_LOGIN_URL: bot.url,
    TEAMS_SERVICE_URL: bot.serviceUrl,
    TEAMS_OPENID_METADATA_URL: bot.openIdMetadataUrl,
    SLACK_MESSAGE_INTERVAL_MS: '20',
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    VAPID_PUBLIC_KEY: vapid.publicKey,
    VAPID_PRIVATE_KEY: vapid.privateKey,
    VAPID_SUBJECT: 'mailto:ops@acme.test',
    OUTBOX_POLL_INTERVAL_MS: '100',
    REMINDER_WATCH_INTERVAL_MS: '100',
    PUBLIC_URL: 'https://gate.acme.test',
  });
  org = await env.createOrg();
  [alice, bob, carol, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  for (const [member, userId] of [
    [bob, 'U0BOB'],
    [vic, 'U0VIC'],
  ] as const)
    await org
      .request('patch', `/v1/members/${member.id}`)
      .send({ slack: { teamId: SLACK_TEAM_ID, userId } })
      .expect(200);
  for (const member of [alice, bob, vic]) {
    const device = pushService.device(member.email.split('@')[0]);
    await member
      .request('post', '/v1/session/push-subscriptions')
      .send({ endpoint: device.endpoint, expirationTime: null, keys: device.keys })
      .expect(201);
  }
  await org
    .request('put', '/v1/integrations/slack')
    .send({ botToken: 'xoxb-1-2-acme', signingSecret: 'a'.repeat(32), channel: '#approvals' })
    .expect(200);
  await org
    .request('put', '/v1/integrations/teams')
    .send({ appId: APP_ID, appSecret: APP_SECRET, tenantId: TENANT_ID, teamId: TEAM_ID, channelId: CHANNEL_ID })
    .expect(200);
  await org.request('put', '/v1/policies/nudged').send({ quorum: 2, remindAfterSeconds: 1, remindEverySeconds: 2 }).expect(200);
  await org.request('put', '/v1/policies/once').send({ remindAfterSeconds: 1 }).expect(200);
  await org.request('put', '/v1/policies/quiet').send({}).expect(200);
  // Several worker processes, each with its own reminder watcher and queue worker, over one database and Redis.
  workers.push(
    await startWorkerRuntime(env.services, [
      'outbox-relay',
      'approval-mail',
      'slack-post',
      'teams-post',
      'push-notify',
      'approval-reminders',
    ]),
  );
  for (let peer = 0; peer < 3; peer++) workers.push(await startWorkerRuntime((await env.createPeer()).services, ['approval-reminders']));
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await env?.close();
  await Promise.all([smtp?.close(), pushService?.close(), slack?.close(), bot?.close()]);
});

async function requestApproval(policyKey: string) {
  const res = await org
    .request('post', '/v1/approvals')
    .send({ action: 'refund', payload: { amount: 120 }, policyKey, agent: 'billing-bot' })
    .expect(201);
  return res.body as { id: string };
}

const remindersAbout = (id: string) =>
  smtp.received.filter((mail) => mail.subject.startsWith('Reminder:') && mail.text.includes(`/console/approvals/${id}`));
const pushRemindersAbout = (id: string) =>
  pushService.deliveries.filter((delivery) => {
    const message = delivery.message as { title: string; url: string };
    return message.title.startsWith('Reminder:') && message.url.endsWith(id);
  });
const slackRemindersAbout = (id: string) =>
  slack
    .of('chat.postMessage')
    .filter((call) => String(call.args.text ?? '').startsWith('Reminder:') && String(call.args.text).includes(id));
const teamsRemindersAbout = (id: string) =>
  bot.calls.filter(
    (call) => call.method === 'POST' && JSON.stringify(call.activity).includes(id) && JSON.stringify(call.activity).includes('Reminder:'),
  );
const recipients = (mails: { to: string[] }[]) => mails.flatMap((mail) => mail.to).sort();

describe('reminders before a request expires', () => {
  it('remind the members who may decide and have not voted, on each of their channels, once per point, and never after settlement', async () => {
    const approval = await requestApproval('nudged');
    // Alice votes (one of two approvals): she is not reminded.
    await alice.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);

    const first = await eventually(() => (remindersAbout(approval.id).length >= 2 ? remindersAbout(approval.id) : null), 10_000);
    expect(recipients(first)).toEqual([bob.email, carol.email]);
    expect(first[0]!.text).toContain('Reminder: this request is still waiting, and you have not decided it yet.');
    expect(first[0]!.text).toMatch(/Approve: +https:\/\/gate\.acme\.test\/d\//);
    const pushed = await eventually(() => (pushRemindersAbout(approval.id).length >= 1 ? pushRemindersAbout(approval.id) : null));
    expect(pushed.map((delivery) => delivery.device)).toEqual(['bob']);
    const [reply] = await eventually(() => (slackRemindersAbout(approval.id).length >= 1 ? slackRemindersAbout(approval.id) : null));
    const [post] = slack
      .of('chat.postMessage')
      .filter((call) => call.args.blocks && JSON.stringify(call.args.blocks).includes(approval.id));
    // In the thread of the request's own message, naming who may decide through Slack and has not (not Alice, not the viewer).
    expect(reply!.args.thread_ts).toBeDefined();
    expect(post).toBeDefined();
    const named = /Not decided yet by: ([^.]+\.test(?:, [^.]+\.test)*)\./.exec(reply!.args.text)![1]!.split(', ');
    expect(named.sort()).toEqual([bob.email, carol.email]);
    // A card in the Teams channel, naming who may decide through Teams and has not.
    const [card] = await eventually(() => (teamsRemindersAbout(approval.id).length >= 1 ? teamsRemindersAbout(approval.id) : null));
    expect(card!.conversationId).toBe(CHANNEL_ID);
    expect(JSON.stringify(card!.activity)).toMatch(/Not decided yet by: [^"]*bob@acme\.test/);
    expect(JSON.stringify(card!.activity)).not.toContain(alice.email);

    // The repeat, two seconds on: once more each, on every channel.
    await eventually(() => (remindersAbout(approval.id).length >= 4 ? true : null), 10_000);
    await sleep(500);
    expect(recipients(remindersAbout(approval.id))).toEqual([bob.email, bob.email, carol.email, carol.email]);
    expect(pushRemindersAbout(approval.id)).toHaveLength(2);
    expect(slackRemindersAbout(approval.id)).toHaveLength(2);
    expect(teamsRemindersAbout(approval.id)).toHaveLength(2);

    // Settled: nothing more, however long it waits, and the schedule is gone.
    await bob.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const told = { mail: remindersAbout(approval.id).length, push: pushRemindersAbout(approval.id).length };
    await sleep(3_000);
    expect(remindersAbout(approval.id)).toHaveLength(told.mail);
    expect(pushRemindersAbout(approval.id)).toHaveLength(told.push);
    expect(await env.services.db.approvalReminder.findUnique({ where: { approvalId: approval.id } })).toBeNull();
  });

  it('without a repeat, remind once; a policy without reminders never reminds', async () => {
    const reminded = await requestApproval('once');
    const silent = await requestApproval('quiet');
    await eventually(() => (remindersAbout(reminded.id).length >= 3 ? true : null), 10_000);
    await sleep(2_500);
    expect(recipients(remindersAbout(reminded.id))).toEqual([alice.email, bob.email, carol.email]);
    expect(remindersAbout(silent.id)).toEqual([]);
    expect(await env.services.db.approvalReminder.findMany({ where: { approvalId: { in: [reminded.id, silent.id] } } })).toEqual([]);
  });

  it('stop while changes are asked for, and start again from the first for a revision', async () => {
    await org.request('put', '/v1/policies/revisable').send({ remindAfterSeconds: 2 }).expect(200);
    const approval = await requestApproval('revisable');
    await alice
      .request('post', `/v1/approvals/${approval.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Half of it, please.' })
      .expect(200);
    await sleep(2_500);
    expect(remindersAbout(approval.id)).toEqual([]);
    await org
      .request('post', `/v1/approvals/${approval.id}/revisions`)
      .send({ payload: { amount: 60 } })
      .expect(201);
    const reminded = await eventually(() => (remindersAbout(approval.id).length >= 3 ? remindersAbout(approval.id) : null), 10_000);
    expect(recipients(reminded)).toEqual([alice.email, bob.email, carol.email]);
    expect(reminded[0]!.subject).toBe('Reminder: approval needed: refund (revision 2)');
  });

  it('are sent once by many workers running the same due point at the same time', async () => {
    // A point whose job Redis lost and was handed over again while the first still ran: ten jobs, four workers.
    await org.request('put', '/v1/policies/later').send({ remindAfterSeconds: 3600 }).expect(200);
    const approval = await requestApproval('later');
    const schedule = await eventually(() => env.services.db.approvalReminder.findUnique({ where: { approvalId: approval.id } }));
    await env.services.db.approvalReminder.update({ where: { approvalId: approval.id }, data: { dueAt: new Date(Date.now() - 1000) } });
    const queue = env.services.jobs.queue(approvalReminderJob);
    const payload = { orgId: org.orgId, approvalId: approval.id, revision: schedule.revision, point: schedule.point };
    await Promise.all(Array.from({ length: 10 }, () => queue.add('remind', payload, { jobId: `race-${randomUUID()}` })));
    await eventually(() => (remindersAbout(approval.id).length >= 3 ? true : null), 10_000);
    await sleep(1_500);
    expect(recipients(remindersAbout(approval.id))).toEqual([alice.email, bob.email, carol.email]);
    expect(
      pushRemindersAbout(approval.id)
        .map((delivery) => delivery.device)
        .sort(),
    ).toEqual(['alice', 'bob']);
    expect(slackRemindersAbout(approval.id)).toHaveLength(1);
    expect(teamsRemindersAbout(approval.id)).toHaveLength(1);
    // Without a repeat, the point sent was the last.
    expect(await env.services.db.approvalReminder.findUnique({ where: { approvalId: approval.id } })).toBeNull();
  });

  it('are refused in a policy as the API refuses any bad field', async () => {
    const repeatAlone = await org.request('put', '/v1/policies/bad').send({ remindEverySeconds: 60 }).expect(422);
    expect(repeatAlone.body.errors).toEqual([expect.objectContaining({ path: 'remindEverySeconds' })]);
    const zero = await org.request('put', '/v1/policies/bad').send({ remindAfterSeconds: 0 }).expect(422);
    expect(zero.body.errors).toEqual([expect.objectContaining({ path: 'remindAfterSeconds' })]);
    const shown = await org.request('get', '/v1/policies/nudged').expect(200);
    expect(shown.body).toMatchObject({ remindAfterSeconds: 1, remindEverySeconds: 2 });
  });
});
