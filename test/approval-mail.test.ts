import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMailConsumer } from '../src/consumers/approval-mail/approval-mail.js';
import { formatUtc } from '../src/lib/display-time.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { confirmLink, linksOf, nonceOf, pathOf } from './support/decision-links.js';
import { eventually } from './support/eventually.js';
import { createMember, type TestMember } from './support/members.js';
import { startSmtpServer, type ReceivedMail, type SmtpServer } from './support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let smtp: SmtpServer;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let alice: TestMember;
let bob: TestMember;
let carol: TestMember;
let viewer: TestMember;
let quiet: TestMember;

beforeAll(async () => {
  smtp = await startSmtpServer();
  env = await createTestEnv({ SMTP_URL: smtp.url, OUTBOX_POLL_INTERVAL_MS: '100', PUBLIC_URL: 'https://gate.acme.test' });
  org = await env.createOrg();
  [alice, bob, carol, viewer, quiet] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
    createMember(env, org, 'reviewer', 'quiet@acme.test'),
  ]);
  await quiet.request('patch', '/v1/members/me').send({ emailNotifications: false }).expect(200);
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  await org.request('put', '/v1/policies/two-eyes').send({ quorum: 2 }).expect(200);
  await org.request('put', '/v1/policies/brief').send({ timeoutSeconds: 1 }).expect(200);
  await org
    .request('put', '/v1/policies/api-only')
    .send({ channels: ['api', 'console'] })
    .expect(200);
  await org
    .request('put', '/v1/policies/admins')
    .send({ reviewers: { roles: ['admin'] } })
    .expect(200);
  await org
    .request('put', '/v1/policies/in-turn')
    .send({
      stages: [
        { name: 'Team lead', reviewers: { members: ['alice@acme.test'] } },
        { name: 'Finance', reviewers: { members: ['bob@acme.test', 'carol@acme.test'] } },
      ],
    })
    .expect(200);
  await org.request('put', '/v1/policies/first-line').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'admins' }).expect(200);
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-mail', 'approval-expiry']);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await smtp?.close();
});

async function requestApproval(
  policyKey: string,
  payload: Record<string, unknown> = { amount: 120, currency: 'EUR' },
  extra: { onBehalfOf?: string } = {},
) {
  const res = await org
    .request('post', '/v1/approvals')
    .send({ action: 'refund', payload, policyKey, agent: 'billing-bot', ...extra })
    .expect(201);
  return res.body as { id: string; expiresAt: string; status: string; revision: number };
}

const mailsAbout = (approvalId: string) => smtp.received.filter((mail) => mail.text.includes(`/console/approvals/${approvalId}`));
const mailTo = (approvalId: string, member: TestMember): ReceivedMail => {
  const mails = mailsAbout(approvalId).filter((mail) => mail.to.includes(member.email));
  expect(mails).toHaveLength(1);
  return mails[0]!;
};

async function approvalState(id: string) {
  return (await org.request('get', `/v1/approvals/${id}`).expect(200)).body as { status: string; votes: unknown[]; decidedBy: unknown };
}

describe('the approval mail', () => {
  it('goes once to each member who may decide by email: not to viewers, nor to members who turned it off', async () => {
    const approval = await requestApproval('refunds');
    const mails = await eventually(() => (mailsAbout(approval.id).length >= 3 ? mailsAbout(approval.id) : null));
    expect(mails.map((mail) => mail.to).sort()).toEqual([[alice.email], [bob.email], [carol.email]]);

    const mail = mailTo(approval.id, alice);
    expect(mail.subject).toBe('Approval needed: refund');
    expect(mail.from).toBe(env.config.MAIL_FROM);
    // The reader's zone is unknown to a mail: UTC, said so.
    for (const fact of ['refund', 'billing-bot', 'refunds', formatUtc(approval.expiresAt), '"amount": 120']) {
      expect(mail.text).toContain(fact);
      expect(mail.html).toContain(fact.replace(/"/g, '&quot;'));
    }
    const links = linksOf(mail.text);
    expect(links.approve).toMatch(/^https:\/\/gate\.acme\.test\/d\/[A-Za-z0-9_-]{43}$/);
    expect(links.reject).toMatch(/^https:\/\/gate\.acme\.test\/d\/[A-Za-z0-9_-]{43}$/);
    expect(links.requestChanges).toMatch(/^https:\/\/gate\.acme\.test\/d\/[A-Za-z0-9_-]{43}$/);
    expect(new Set([links.approve, links.reject, links.requestChanges]).size).toBe(3);
    expect(links.console).toBe(`https://gate.acme.test/console/approvals/${approval.id}`);
    expect(mail.html).toContain(`href="${links.approve}"`);
    expect(mail.html).toContain(`href="${links.reject}"`);
    expect(mail.html).toContain(`href="${links.requestChanges}"`);
    expect(mail.html).toContain(`href="${links.console}"`);
    // Each member's links are their own.
    expect(linksOf(mailTo(approval.id, bob).text).approve).not.toBe(links.approve);

    // Only hashes of the tokens are stored.
    const stored = await env.services.db.decisionLink.findMany({ where: { approvalId: approval.id } });
    expect(stored).toHaveLength(9);
    const token = pathOf(links.approve).split('/').pop()!;
    expect(JSON.stringify(stored)).not.toContain(token);

    // The event handled again (a redelivered job) tells nobody twice.
    const [event] = await env.services.db.outboxMessage.findMany({
      where: { orgId: org.orgId, eventType: 'approval.created' },
      orderBy: { id: 'desc' },
      take: 1,
    });
    const [domainEvent] = await env.services.outbox.load([event!.eventId]);
    await expect(approvalMailConsumer.handle(env.services)(domainEvent!)).resolves.toEqual({ sent: 0, entitled: 3 });
    expect(mailsAbout(approval.id)).toHaveLength(3);
    expect(mailsAbout(approval.id).some((m) => m.to.includes(viewer.email) || m.to.includes(quiet.email))).toBe(false);
  });

  it('escapes what the request carries in the HTML and shortens a payload past 2 KB', async () => {
    const approval = await requestApproval('refunds', {
      note: '<script>alert("x")</script><img src=x onerror=alert(1)>',
      zblob: 'z'.repeat(4000),
    });
    await eventually(() => mailsAbout(approval.id).length === 3);
    const mail = mailTo(approval.id, carol);
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).not.toContain('<img');
    expect(mail.html).toContain('&lt;script&gt;');
    expect(mail.text).toContain('(shortened: ');
    expect(mail.text).not.toContain('z'.repeat(3000));
    expect(mail.html).toContain('(shortened: ');
  });

  it('goes out for an orphan and for an escalation’s successor, to the members its rules name', async () => {
    const orphan = (
      await org.request('post', '/v1/approvals').send({ action: 'drop-table', payload: {}, policyKey: 'nobody-wrote-this' }).expect(201)
    ).body;
    await eventually(() => mailsAbout(orphan.id).length === 3);

    const first = await requestApproval('first-line');
    await eventually(() => mailsAbout(first.id).length === 3);
    const escalated = await eventually(async () => {
      const state = (await org.request('get', `/v1/approvals/${first.id}`).expect(200)).body;
      return state.status === 'escalated' ? (state.escalatedTo as string) : null;
    });
    const successorMails = await eventually(() => (mailsAbout(escalated).length >= 1 ? mailsAbout(escalated) : null));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(successorMails.map((mail) => mail.to)).toEqual([[carol.email]]);
  });

  it('goes out again for each revision, with new links; the links of the earlier revision no longer decide', async () => {
    const approval = await requestApproval('refunds', { amount: 500 });
    await eventually(() => mailsAbout(approval.id).length === 3);
    const firstLinks = linksOf(mailTo(approval.id, alice).text);
    await org
      .asReviewer('post', `/v1/approvals/${approval.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Less, please.' })
      .expect(200);
    // Settled by the request for changes: the link shows it, and no longer decides.
    const settled = await env.http.get(pathOf(firstLinks.approve)).expect(200);
    expect(settled.text).toContain('Changes requested by');
    expect((await confirmLink(env, firstLinks.reject)).status).toBe(409);
    await org
      .request('post', `/v1/approvals/${approval.id}/revisions`)
      .send({ payload: { amount: 250 }, note: 'Halved.' })
      .expect(201);
    await eventually(() => mailsAbout(approval.id).length === 6);
    const toAlice = mailsAbout(approval.id).filter((mail) => mail.to.includes(alice.email));
    expect(toAlice).toHaveLength(2);
    expect(toAlice[1]!.text).toContain('250');
    const secondLinks = linksOf(toAlice[1]!.text);
    expect(secondLinks.approve).not.toBe(firstLinks.approve);
    // The first revision's link is gone (410): it was for a payload no longer asked about.
    expect((await confirmLink(env, firstLinks.approve)).status).toBe(410);
    expect((await confirmLink(env, secondLinks.approve)).status).toBe(200);
    expect(await approvalState(approval.id)).toMatchObject({ status: 'approved' });
  });

  it('goes to nobody when the policy keeps email out of its channels', async () => {
    const approval = await requestApproval('api-only');
    const [event] = await env.services.db.outboxMessage.findMany({
      where: { orgId: org.orgId, eventType: 'approval.created' },
      orderBy: { id: 'desc' },
      take: 1,
    });
    await eventually(
      async () =>
        (await env.services.db.consumerTask.findFirst({ where: { eventId: event!.eventId, consumer: 'approval-mail' } }))?.status ===
        'done',
    );
    expect(mailsAbout(approval.id)).toEqual([]);
  });
});

describe('decision links', () => {
  it('change nothing however often they are opened, as mail scanners open them', async () => {
    const approval = await requestApproval('refunds');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { approve, reject } = linksOf(mailTo(approval.id, alice).text);

    const opened = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 4 === 3 ? env.http.head(pathOf(approve)) : env.http.get(pathOf(i % 2 ? reject : approve)))),
    );
    for (const res of opened) {
      expect(res.status).toBe(200);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-robots-tag']).toBe('noindex');
      expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    }
    const page = opened[0]!.text;
    expect(page).toContain('Approve this request?');
    expect(page).toContain('alice@acme.test');
    expect(page).toContain('billing-bot');
    expect(page).toMatch(/<form method="post">/);
    expect(nonceOf(page)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(await approvalState(approval.id)).toMatchObject({ status: 'pending', votes: [] });
    expect(await env.services.db.decisionLink.count({ where: { approvalId: approval.id, usedAt: { not: null } } })).toBe(0);
  });

  it('decide only with the page’s nonce: without it 422 and nothing changes, with it the member’s vote', async () => {
    const approval = await requestApproval('refunds');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { approve } = linksOf(mailTo(approval.id, bob).text);

    const blind = await env.http.post(pathOf(approve)).type('form').send({ feedback: 'scanner' });
    expect(blind.status).toBe(422);
    expect(blind.text).toContain('nothing was decided');
    const forged = await env.http
      .post(pathOf(approve))
      .type('form')
      .send({ nonce: 'A'.repeat(22) });
    expect(forged.status).toBe(422);
    const tooLong = await env.http
      .post(pathOf(approve))
      .type('form')
      .send({ nonce: nonceOf((await env.http.get(pathOf(approve))).text), feedback: 'x'.repeat(5001) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.text).toContain('5,000 characters');
    expect(await approvalState(approval.id)).toMatchObject({ status: 'pending', votes: [] });

    const confirmed = await confirmLink(env, approve, 'refund is within policy');
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('Request approved');
    expect(confirmed.headers['cache-control']).toBe('no-store');
    const state = await org.request('get', `/v1/approvals/${approval.id}`).expect(200);
    expect(state.body).toMatchObject({
      status: 'approved',
      feedback: 'refund is within policy',
      decidedBy: { type: 'user', id: bob.id, email: bob.email },
    });
    const [vote] = await env.services.db.approvalVote.findMany({ where: { approvalId: approval.id } });
    expect(vote!.channel).toBe('email');
  });

  it('work once: used on a request still pending 410, the sibling too; after the settlement 200 with the outcome and 409', async () => {
    const approval = await requestApproval('two-eyes');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const aliceLinks = linksOf(mailTo(approval.id, alice).text);
    const bobLinks = linksOf(mailTo(approval.id, bob).text);

    const first = await confirmLink(env, aliceLinks.approve);
    expect(first.status).toBe(200);
    expect(first.text).toContain('Your approval is recorded');
    expect(first.text).toContain('1 of 2 approvals so far');
    expect((await approvalState(approval.id)).status).toBe('pending');

    for (const link of [aliceLinks.approve, aliceLinks.reject]) {
      const opened = await env.http.get(pathOf(link));
      expect(opened.status).toBe(410);
      expect(opened.text).toContain('This link was used already');
      expect((await env.http.post(pathOf(link)).type('form').send({ nonce: 'x' })).status).toBe(410);
    }

    expect((await confirmLink(env, bobLinks.reject, 'not this month')).status).toBe(200);
    for (const link of [bobLinks.reject, bobLinks.approve, aliceLinks.approve]) {
      const opened = await env.http.get(pathOf(link));
      expect(opened.status).toBe(200);
      expect(opened.text).toContain('This request is rejected');
      expect(opened.text).toContain(`Rejected by ${bob.email}`);
      expect(opened.text).toContain('not this month');
      const again = await env.http
        .post(pathOf(link))
        .type('form')
        .send({ nonce: nonceOf(opened.text) });
      expect(again.status).toBe(409);
      expect(again.text).toContain('Nothing was changed');
    }
    const carolLinks = linksOf(mailTo(approval.id, carol).text);
    expect((await confirmLink(env, carolLinks.approve)).status).toBe(409);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(2);
  });

  it('let exactly one of many concurrent confirmations of one member’s links through', async () => {
    const approval = await requestApproval('two-eyes');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { approve, reject } = linksOf(mailTo(approval.id, carol).text);
    const [approvePage, rejectPage] = await Promise.all([env.http.get(pathOf(approve)), env.http.get(pathOf(reject))]);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        env.http
          .post(pathOf(i % 2 ? reject : approve))
          .type('form')
          .send({ nonce: nonceOf((i % 2 ? rejectPage : approvePage).text) }),
      ),
    );
    const statuses = results.map((res) => res.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.every((status) => status === 200 || status === 409 || status === 410)).toBe(true);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(1);
  });

  it('answer 410 once the request expired, and 410 for a token nobody issued', async () => {
    const approval = await requestApproval('brief');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { approve } = linksOf(mailTo(approval.id, alice).text);
    await eventually(async () => (await approvalState(approval.id)).status === 'expired');
    const opened = await env.http.get(pathOf(approve));
    expect(opened.status).toBe(410);
    expect(opened.text).toContain('This request has expired');
    expect(
      (
        await env.http
          .post(pathOf(approve))
          .type('form')
          .send({ nonce: nonceOf(opened.text) })
      ).status,
    ).toBe(410);

    for (const path of ['/d/' + 'A'.repeat(43), '/d/short', '/d/%3Cscript%3E']) {
      const unknown = await env.http.get(path);
      expect(unknown.status).toBe(410);
      expect(unknown.text).toContain('This link does not work');
      expect(unknown.text).not.toMatch(/at .*\.ts:\d+/);
      expect((await env.http.post(path).type('form').send({ nonce: 'x' })).status).toBe(410);
    }
  });

  it('refuse a member who may no longer decide with a page that says what to do, and work again once they may', async () => {
    const approval = await requestApproval('refunds');
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { approve } = linksOf(mailTo(approval.id, alice).text);
    await org.request('patch', `/v1/members/${alice.id}`).send({ role: 'viewer' }).expect(200);
    const refused = await confirmLink(env, approve);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('You may not decide this request');
    expect(refused.text).toContain('ask one of them, or an admin to add you');
    expect((await approvalState(approval.id)).status).toBe('pending');

    await org.request('patch', `/v1/members/${alice.id}`).send({ role: 'reviewer' }).expect(200);
    expect((await confirmLink(env, approve)).status).toBe(200);
    expect((await approvalState(approval.id)).decidedBy).toMatchObject({ id: alice.id });
  });

  it('refuse with their own reason a link that meets self-approval or a channel the policy leaves out', async () => {
    // The service mails links only to members who may decide; these are issued by hand to show the pages.
    const own = await requestApproval('refunds', {}, { onBehalfOf: carol.email });
    const selfLink = (await env.services.decisionLinks.issue(org.orgId, own, carol.id)).approve;
    const selfRefused = await confirmLink(env, selfLink);
    expect(selfRefused.status).toBe(403);
    expect(selfRefused.text).toContain('another reviewer must decide it');

    const kept = await requestApproval('api-only');
    const keptLink = (await env.services.decisionLinks.issue(org.orgId, kept, carol.id)).reject;
    const channelRefused = await confirmLink(env, keptLink);
    expect(channelRefused.status).toBe(403);
    expect(channelRefused.text).toContain('does not allow decisions through email; decide it through api or console');
    expect((await approvalState(own.id)).votes).toEqual([]);
    expect((await approvalState(kept.id)).votes).toEqual([]);
  });

  it('answer 409 to a member who voted in the console already', async () => {
    const approval = await requestApproval('two-eyes');
    await eventually(() => mailsAbout(approval.id).length === 3);
    await bob.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const res = await confirmLink(env, linksOf(mailTo(approval.id, bob).text).approve);
    expect(res.status).toBe(409);
    expect(res.text).toContain('You voted on this request already');
  });
});

describe('requests for changes by mail', () => {
  const mailsTo = (approvalId: string, member: TestMember) => mailsAbout(approvalId).filter((mail) => mail.to.includes(member.email));
  const payload = { amount: 120, currency: 'EUR', to: { iban: 'DE01', name: 'Ada' } };

  it('offer a third link whose page asks for the feedback; without it nothing is decided, with it the request waits for changes', async () => {
    const approval = await requestApproval('refunds', payload);
    await eventually(() => mailsAbout(approval.id).length === 3);
    const { requestChanges } = linksOf(mailTo(approval.id, alice).text);

    // Opening the link, as often as a scanner does, changes nothing.
    const page = await env.http.get(pathOf(requestChanges));
    await env.http.head(pathOf(requestChanges)).expect(200);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Request changes to this request?');
    expect(page.text).toMatch(/<textarea\s+id="feedback"\s+name="feedback"\s+required\s+minlength="1"\s+maxlength="2000"/);
    expect((await approvalState(approval.id)).status).toBe('pending');

    // No feedback, blank feedback or too much: 422, the form again, the link still unused.
    for (const feedback of [undefined, '   ', 'x'.repeat(2001)]) {
      const refused = await env.http
        .post(pathOf(requestChanges))
        .type('form')
        .send({ nonce: nonceOf(page.text), ...(feedback === undefined ? {} : { feedback }) });
      expect(refused.status).toBe(422);
      expect(refused.text).toContain('Nothing was decided');
      expect(refused.text).toContain('Request changes to this request?');
    }
    expect((await approvalState(approval.id)).status).toBe('pending');
    expect((await env.http.get(pathOf(requestChanges))).status).toBe(200);

    const done = await confirmLink(env, requestChanges, 'Refund 100 & keep <the> fee');
    expect(done.status).toBe(200);
    expect(done.text).toContain('Changes requested');
    expect(done.text).toContain('Refund 100 &amp; keep &lt;the&gt; fee');
    const view = (await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body;
    expect(view).toMatchObject({ status: 'changes_requested', feedback: 'Refund 100 & keep <the> fee', revision: 1 });
    expect(view.decidedBy).toMatchObject({ type: 'user', email: alice.email });

    // Used: a replay, the sibling links, and other members' links show where it stands and change nothing.
    for (const link of [requestChanges, linksOf(mailTo(approval.id, alice).text).approve, linksOf(mailTo(approval.id, bob).text).approve]) {
      const opened = await env.http.get(pathOf(link));
      expect(opened.status).toBe(200);
      expect(opened.text).toContain('This request is waiting for the changes a reviewer asked for');
      const again = await env.http
        .post(pathOf(link))
        .type('form')
        .send({ nonce: nonceOf(opened.text), feedback: 'again' });
      expect(again.status).toBe(409);
    }
    expect((await approvalState(approval.id)).status).toBe('changes_requested');
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(1);
  });

  it('mail a revision anew, saying "revision N" and listing the changed fields; the links of the earlier revision no longer work', async () => {
    const approval = await requestApproval('refunds', payload);
    await eventually(() => mailsAbout(approval.id).length === 3);
    const first = linksOf(mailTo(approval.id, alice).text);
    // Links of a member the revision's mail will not reach (mail turned off): they stay, for revision 1.
    const view = (await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body;
    const quietLinks = await env.services.decisionLinks.issue(org.orgId, view, quiet.id);
    expect((await confirmLink(env, first.requestChanges, 'Refund 100, to the other account')).status).toBe(200);

    await org
      .request('post', `/v1/approvals/${approval.id}/revisions`)
      .send({
        payload: { amount: 100, currency: 'EUR', to: { iban: 'DE02', name: 'Ada' }, memo: 'partial' },
        note: 'Refunding 100 to DE02',
      })
      .expect(201);
    const mails = await eventually(() => (mailsTo(approval.id, alice).length === 2 ? mailsTo(approval.id, alice) : null));
    const revised = mails[1]!;
    expect(revised.subject).toBe('Approval needed: refund (revision 2)');
    for (const text of ['revision 2', 'Changed fields: amount, memo, to.iban', 'Refund 100, to the other account', 'Refunding 100 to DE02'])
      expect(revised.text).toContain(text);
    for (const text of [
      '(revision 2)',
      'Changed fields',
      'amount, memo, to.iban',
      'Refund 100, to the other account',
      'Refunding 100 to DE02',
    ])
      expect(revised.html).toContain(text);
    // Every reviewer is told again, once; a request for changes itself mails no reviewer.
    await eventually(() => mailsAbout(approval.id).length === 6);
    expect(mailsTo(approval.id, bob)).toHaveLength(2);

    // The first mail's links are for a payload no longer asked about: the revision's mail replaced them.
    for (const link of [first.approve, first.reject, first.requestChanges]) {
      const opened = await env.http.get(pathOf(link));
      expect(opened.status).toBe(410);
      expect(opened.text).toContain('the mail about a new revision has links of its own');
      expect(
        (
          await env.http
            .post(pathOf(link))
            .type('form')
            .send({ nonce: nonceOf(opened.text), feedback: 'x' })
        ).status,
      ).toBe(410);
    }
    for (const link of [quietLinks.approve, quietLinks.requestChanges]) {
      const opened = await env.http.get(pathOf(link));
      expect(opened.status).toBe(410);
      expect(opened.text).toContain('This request was revised');
      expect(
        (
          await env.http
            .post(pathOf(link))
            .type('form')
            .send({ nonce: nonceOf(opened.text), feedback: 'x' })
        ).status,
      ).toBe(410);
    }
    const second = linksOf(revised.text);
    const page = await env.http.get(pathOf(second.approve));
    expect(page.text).toContain('Revision 2 of this request.');
    expect(page.text).toContain('Refunding 100 to DE02');
    expect((await confirmLink(env, second.approve)).status).toBe(200);
    expect((await approvalState(approval.id)).status).toBe('approved');
  });

  it('let one of many concurrent confirmations win: request changes, reject and approve links of three members', async () => {
    const approval = await requestApproval('refunds', payload);
    await eventually(() => mailsAbout(approval.id).length === 3);
    const links = [
      linksOf(mailTo(approval.id, alice).text).requestChanges,
      linksOf(mailTo(approval.id, bob).text).reject,
      linksOf(mailTo(approval.id, carol).text).approve,
    ];
    const pages = await Promise.all(links.map((link) => env.http.get(pathOf(link))));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        env.http
          .post(pathOf(links[i % 3]!))
          .type('form')
          .send({ nonce: nonceOf(pages[i % 3]!.text), feedback: 'change it' }),
      ),
    );
    const statuses = results.map((res) => res.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.every((status) => status === 200 || status === 409 || status === 410)).toBe(true);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: approval.id } })).toBe(1);
    expect(['approved', 'rejected', 'changes_requested']).toContain((await approvalState(approval.id)).status);
  });
});

describe('a worker killed while it sends', () => {
  it('sends nobody a second mail, and still mails those it had not reached', async () => {
    let held = false;
    const holding = await startSmtpServer({ hold: (mail) => !held && (held = mail.to.includes('first@acme.test')) });
    const local = await createTestEnv({ SMTP_URL: holding.url, OUTBOX_POLL_INTERVAL_MS: '100', WORKER_LOCK_DURATION_MS: '1000' });
    try {
      const localOrg = await local.createOrg();
      const members = [];
      for (const email of ['first@acme.test', 'second@acme.test', 'third@acme.test'])
        members.push(await createMember(local, localOrg, 'reviewer', email));
      const child = spawn(process.execPath, ['--import', 'tsx', 'workers/index.ts'], {
        env: {
          ...process.env,
          NODE_ENV: 'test',
          LOG_LEVEL: 'info',
          DATABASE_URL: local.config.DATABASE_URL,
          REDIS_PREFIX: local.config.REDIS_PREFIX,
          SMTP_URL: holding.url,
          OUTBOX_POLL_INTERVAL_MS: '100',
          WORKER_LOCK_DURATION_MS: '1000',
          WORKER_QUEUES: 'outbox-relay,approval-mail',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('worker started') && resolve());
        child.on('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      });
      const approval = (
        await localOrg.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, policyKey: 'none' }).expect(201)
      ).body;
      // The first mail is in the server's hands, its answer never comes: the worker is mid-send.
      await eventually(() => holding.received.length === 1);
      child.kill('SIGKILL');
      await once(child, 'exit');

      const runtime = await startWorkerRuntime(local.services, ['approval-mail']);
      try {
        await eventually(() => holding.received.length === 3, 20_000);
        await new Promise((resolve) => setTimeout(resolve, 1500));
      } finally {
        await runtime.stop();
      }
      expect(holding.received.map((mail) => mail.to[0]).sort()).toEqual(['first@acme.test', 'second@acme.test', 'third@acme.test']);
      const notices = await local.services.db.approvalNotification.findMany({
        where: { approvalId: approval.id },
        orderBy: { claimedAt: 'asc' },
      });
      expect(notices.map((notice) => [notice.recipient, notice.status])).toEqual([
        [members[0]!.id, 'sending'],
        [members[1]!.id, 'sent'],
        [members[2]!.id, 'sent'],
      ]);
    } finally {
      await local.close();
      await holding.close();
    }
  }, 120_000);

  it('sends again a mail the server refused, and only that one', async () => {
    let refusals = 0;
    const flaky = await startSmtpServer({ refuseRecipients: (address) => address === 'bounced@acme.test' && refusals++ === 0 });
    const local = await createTestEnv({ SMTP_URL: flaky.url });
    try {
      const localOrg = await local.createOrg();
      await createMember(local, localOrg, 'reviewer', 'steady@acme.test');
      await createMember(local, localOrg, 'reviewer', 'bounced@acme.test');
      const approval = (
        await localOrg.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, policyKey: 'none' }).expect(201)
      ).body;
      const [event] = await local.services.db.outboxMessage.findMany({ where: { orgId: localOrg.orgId, eventType: 'approval.created' } });
      const [domainEvent] = await local.services.outbox.load([event!.eventId]);
      const handle = approvalMailConsumer.handle(local.services);
      await expect(handle(domainEvent!)).rejects.toThrow(/not accepted for 1 member/);
      await expect(handle(domainEvent!)).resolves.toEqual({ sent: 1, entitled: 2 });
      await expect(handle(domainEvent!)).resolves.toEqual({ sent: 0, entitled: 2 });
      expect(flaky.received.map((mail) => mail.to[0]).sort()).toEqual(['bounced@acme.test', 'steady@acme.test']);
      expect(await local.services.db.approvalNotification.count({ where: { approvalId: approval.id, status: 'sent' } })).toBe(2);
    } finally {
      await local.close();
      await flaky.close();
    }
  });
});

describe('stages of reviewers', () => {
  it("mails each stage's reviewers when their stage begins, and only them", async () => {
    const approval = await requestApproval('in-turn');
    const first = await eventually(() => (mailsAbout(approval.id).length > 0 ? mailsAbout(approval.id) : null));
    expect(first.map((mail) => mail.to)).toEqual([[alice.email]]);
    expect(first[0]!.subject).toBe('Approval needed: refund · Stage 1 (Team lead)');

    await alice.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const all = await eventually(() => (mailsAbout(approval.id).length >= 3 ? mailsAbout(approval.id) : null));
    expect(all.flatMap((mail) => mail.to).sort()).toEqual([alice.email, bob.email, carol.email].sort());
    const finance = mailTo(approval.id, bob);
    expect(finance.subject).toBe('Approval needed: refund · Stage 2 (Finance)');
    expect(finance.text).toContain('The reviewers of stage 1 approved "refund"');
    // Its links decide in stage 2.
    await confirmLink(env, linksOf(finance.text).approve);
    expect(await approvalState(approval.id)).toMatchObject({ status: 'approved' });
    expect(mailsAbout(approval.id)).toHaveLength(3);
  });
});
