import { beforeAll, describe, expect, it } from 'vitest';
import { ApprovalStore } from '../src/modules/approvals/approval-store.js';
import { createApproval, voteOn } from '../src/modules/approvals/approval-transitions.js';
import { creationItem, voteItem } from '../src/modules/approvals/approval-writes.js';
import { approvalMail } from '../src/modules/notifications/approval-mail.js';
import { approvalMessage } from '../src/modules/slack/slack-messages.js';
import { approvalCard } from '../src/modules/teams/teams-cards.js';
import { readChain } from './support/audit-chain.js';
import { createMember, type TestMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

let lead: TestMember;
let finance: TestMember;
let controller: TestMember;
let auditor: TestMember;

/** Team lead first, then finance: two stages with their own reviewers and quorum. */
const LEAD_THEN_FINANCE = {
  stages: [
    { name: 'Team lead', reviewers: { members: ['lead@acme.test'] } },
    { name: 'Finance', reviewers: { members: ['finance@acme.test', 'controller@acme.test'] }, quorum: 2 },
  ],
};

beforeAll(async () => {
  [lead, finance, controller, auditor] = await Promise.all([
    createMember(env, org, 'reviewer', 'lead@acme.test'),
    createMember(env, org, 'reviewer', 'finance@acme.test'),
    createMember(env, org, 'reviewer', 'controller@acme.test'),
    createMember(env, org, 'admin', 'auditor@acme.test'),
  ]);
  await org.request('put', '/v1/policies/lead-then-finance').send(LEAD_THEN_FINANCE).expect(200);
  // Every reviewer and admin is a reviewer of both stages.
  await org
    .request('put', '/v1/policies/anyone-twice')
    .send({
      stages: [
        { name: 'First look', reviewers: { roles: ['reviewer', 'admin'] } },
        { name: 'Second look', reviewers: { roles: ['reviewer', 'admin'] } },
      ],
    })
    .expect(200);
});

async function request(policyKey: string) {
  return (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'pay', payload: { amount: 5000 }, policyKey })
      .expect(201)
  ).body as { id: string; quorum: number; stage: { index: number; name: string } | null };
}

const vote = (as: TestMember, id: string, body: Record<string, unknown> = { verdict: 'approved' }) =>
  as.request('post', `/v1/approvals/${id}/decision`).send(body);

async function outboxOf(approvalId: string, type: string) {
  const rows = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: type } });
  return rows.filter((row) => (row.body as { data: { approvalId: string } }).data.approvalId === approvalId);
}

async function eventsOf(approvalId: string) {
  const chain = await readChain(env.services.db, org.orgId);
  return chain.filter((event) => event.data.approvalId === approvalId);
}

describe('policies with stages', () => {
  it('shows the stages, and neither top-level reviewers nor quorum, in the policy and its versions', async () => {
    const policy = (await org.request('get', '/v1/policies/lead-then-finance').expect(200)).body;
    expect(policy.stages).toEqual([
      { name: 'Team lead', reviewers: { roles: [], members: ['lead@acme.test'] }, quorum: 1 },
      { name: 'Finance', reviewers: { roles: [], members: ['finance@acme.test', 'controller@acme.test'] }, quorum: 2 },
    ]);
    expect(policy).not.toHaveProperty('reviewers');
    expect(policy).not.toHaveProperty('quorum');
    const { versions } = (await org.request('get', '/v1/policies/lead-then-finance/versions').expect(200)).body;
    expect(versions[0].stages).toEqual(policy.stages);
    expect(versions[0]).not.toHaveProperty('reviewers');
    // A policy with one set of reviewers reads as before, with no stages.
    const single = (await org.request('put', '/v1/policies/single').send({ quorum: 2 }).expect(200)).body;
    expect(single).toMatchObject({ stages: null, quorum: 2, reviewers: { roles: ['reviewer', 'admin'], members: [] } });
  });

  it('stores a policy saved back as it was read, with stages or without (stages: null)', async () => {
    await org.request('put', '/v1/policies/single-set').send({ quorum: 2 }).expect(200);
    for (const key of ['lead-then-finance', 'single-set']) {
      const {
        key: _key,
        version: _version,
        createdAt: _created,
        updatedAt: _updated,
        ...document
      } = (await org.request('get', `/v1/policies/${key}`).expect(200)).body;
      const copy = (await org.request('put', `/v1/policies/${key}-copy`).send(document).expect(200)).body;
      expect(copy).toMatchObject(document);
    }
  });

  it.each([
    ['stages with reviewers', { ...LEAD_THEN_FINANCE, reviewers: { roles: ['admin'] } }, 'stages', 'stages replace reviewers'],
    ['stages with a quorum', { ...LEAD_THEN_FINANCE, quorum: 2 }, 'stages', 'stages replace quorum'],
    ['no stage', { stages: [] }, 'stages', 'at least one stage'],
    [
      'six stages',
      { stages: Array.from({ length: 6 }, (_, index) => ({ name: `s${index}`, reviewers: { roles: ['admin'] } })) },
      'stages',
      'at most 5',
    ],
    [
      'a repeated name',
      {
        stages: [
          { name: 'Finance', reviewers: { roles: ['admin'] } },
          { name: 'Finance', reviewers: { roles: ['reviewer'] } },
        ],
      },
      'stages.1.name',
      'must not repeat',
    ],
    ['a stage without a name', { stages: [{ reviewers: { roles: ['admin'] } }] }, 'stages.0.name', ''],
    ['a stage naming nobody', { stages: [{ name: 'Nobody', reviewers: {} }] }, 'stages.0.reviewers', 'at least one role or member'],
    ['a stage without reviewers', { stages: [{ name: 'Nobody' }] }, 'stages.0.reviewers', ''],
    ['a quorum of 0', { stages: [{ name: 'Zero', reviewers: { roles: ['admin'] }, quorum: 0 }] }, 'stages.0.quorum', ''],
    ['a quorum of 11', { stages: [{ name: 'Many', reviewers: { roles: ['admin'] }, quorum: 11 }] }, 'stages.0.quorum', ''],
    ['a viewer as reviewer', { stages: [{ name: 'Viewers', reviewers: { roles: ['viewer'] } }] }, 'stages.0.reviewers.roles.0', 'viewer'],
    ['an unknown field in a stage', { stages: [{ name: 'x', reviewers: { roles: ['admin'] }, timeout: 5 }] }, 'stages.0.timeout', ''],
    ['stages that are not a list', { stages: { name: 'x' } }, 'stages', ''],
    ['a shadow with stages and a quorum', { shadow: { ...LEAD_THEN_FINANCE, quorum: 3 } }, 'shadow.stages', 'stages replace quorum'],
  ])('refuses %s with 422 naming the field', async (_name, body, path, message) => {
    const res = await org.request('put', '/v1/policies/bad-stages').send(body).expect(422);
    expect(res.body.errors).toContainEqual({ path, message: expect.stringContaining(message) });
    await org.request('get', '/v1/policies/bad-stages').expect(404);
  });
});

describe('a request through stages', () => {
  it('starts at stage 1, moves to stage 2 at its quorum with the next reviewers told, and approves at the last quorum', async () => {
    const { id, stage, quorum } = await request('lead-then-finance');
    expect(stage).toEqual({ index: 1, name: 'Team lead' });
    expect(quorum).toBe(1);

    // Finance is not a reviewer of stage 1.
    const early = await vote(finance, id).expect(403);
    expect(early.body).toMatchObject({ code: 'not_a_reviewer', detail: expect.stringContaining("stage 1 of 2 ('Team lead')") });

    const advanced = await vote(lead, id, { verdict: 'approved', feedback: 'fine by me' }).expect(200);
    expect(advanced.body).toMatchObject({ status: 'pending', stage: { index: 2, name: 'Finance' }, quorum: 2, decidedBy: null });
    expect(advanced.body.votes).toEqual([expect.objectContaining({ by: expect.objectContaining({ id: lead.id }), stage: 1 })]);
    const completed = (await eventsOf(id)).filter((event) => event.type === 'approval.stage_completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]!.data).toMatchObject({
      stage: { index: 1, name: 'Team lead' },
      next: { index: 2, name: 'Finance' },
      status: 'pending',
      quorum: 1,
      revision: 1,
      feedback: 'fine by me',
    });
    // The next stage's reviewers are told by the consumers of this message, committed with the stage.
    const message = await env.services.db.outboxMessage.findMany({
      where: { orgId: org.orgId, eventType: 'approval.stage_completed', auditSeq: BigInt(completed[0]!.seq) },
    });
    expect(message).toHaveLength(1);
    const entitled = await env.services.notifications.entitledMembers(org.orgId, id, 'email');
    expect(entitled.map((member) => member.email).sort()).toEqual(['controller@acme.test', 'finance@acme.test']);

    await vote(finance, id).expect(200);
    const approved = await vote(controller, id, { verdict: 'approved', feedback: 'paid' }).expect(200);
    expect(approved.body).toMatchObject({ status: 'approved', stage: { index: 2, name: 'Finance' }, feedback: 'paid' });
    expect(approved.body.votes.map((cast: { stage: number }) => cast.stage)).toEqual([1, 2, 2]);
    expect((await eventsOf(id)).map((event) => event.type)).toEqual([
      'approval.created',
      'approval.stage_completed',
      'approval.vote_recorded',
      'approval.stage_completed',
      'approval.approved',
    ]);
    const [webhook] = await outboxOf(id, 'approval.approved');
    expect((webhook!.body as { data: Record<string, unknown> }).data).toMatchObject({ stage: { index: 2, name: 'Finance' } });
  });

  it('refuses a reviewer of stage 1 only once stage 2 is under review (403 naming the stage)', async () => {
    const { id } = await request('lead-then-finance');
    await vote(lead, id).expect(200);
    // The lead decides stage 1 only; the admin's role and email are named by no stage.
    for (const member of [lead, auditor]) {
      const refused = await vote(member, id).expect(403);
      expect(refused.body).toMatchObject({ code: 'not_a_reviewer', detail: expect.stringContaining("stage 2 of 2 ('Finance')") });
    }
    const view = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(view).toMatchObject({ status: 'pending', stage: { index: 2 } });
    expect(view.votes).toHaveLength(1);
  });

  it('refuses a person voting in stage 1 and again in stage 2 (409), also when both votes come at once', async () => {
    const { id } = await request('anyone-twice');
    await vote(finance, id).expect(200);
    const again = await vote(finance, id).expect(409);
    expect(again.body.detail).toContain('one stage only');
    const { id: racing } = await request('anyone-twice');
    const answers = await Promise.all(Array.from({ length: 6 }, () => vote(auditor, racing)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect((await org.request('get', `/v1/approvals/${racing}`).expect(200)).body).toMatchObject({
      stage: { index: 2 },
      votes: [{ stage: 1 }],
    });
    const approved = await vote(controller, id).expect(200);
    expect(approved.body).toMatchObject({ status: 'approved', stage: { index: 2, name: 'Second look' } });
  });

  it('rejects at a rejection in stage 2, with the stage in the view and the webhook', async () => {
    const { id } = await request('lead-then-finance');
    await vote(lead, id).expect(200);
    await vote(finance, id).expect(200);
    const rejected = await vote(controller, id, { verdict: 'rejected', feedback: 'over budget' }).expect(200);
    expect(rejected.body).toMatchObject({ status: 'rejected', feedback: 'over budget', stage: { index: 2, name: 'Finance' } });
    const [webhook] = await outboxOf(id, 'approval.rejected');
    expect((webhook!.body as { data: Record<string, unknown> }).data).toMatchObject({
      status: 'rejected',
      stage: { index: 2, name: 'Finance' },
    });
    expect((await eventsOf(id)).map((event) => event.type)).toEqual([
      'approval.created',
      'approval.stage_completed',
      'approval.vote_recorded',
      'approval.rejected',
    ]);
  });

  it("lets a member's delegate decide in the stage that names the member, and in no other", async () => {
    const endsAt = new Date(Date.now() + 3_600_000).toISOString();
    await controller.request('put', '/v1/members/me/delegation').send({ delegateId: auditor.id, endsAt }).expect(200);
    try {
      const { id } = await request('lead-then-finance');
      await vote(auditor, id).expect(403); // stage 1 names the lead, whose delegate the auditor is not
      await vote(lead, id).expect(200);
      await vote(finance, id).expect(200);
      const approved = await vote(auditor, id).expect(200);
      expect(approved.body).toMatchObject({ status: 'approved', decidedBy: { id: auditor.id } });
      expect(approved.body.votes.map((cast: { stage: number }) => cast.stage)).toEqual([1, 2, 2]);
    } finally {
      await controller.request('delete', '/v1/members/me/delegation').expect(200);
    }
  });

  it('refuses an edited payload when more than one stage must approve it', async () => {
    const { id } = await request('lead-then-finance');
    const res = await vote(lead, id, { verdict: 'approved', editedPayload: { amount: 1 } }).expect(422);
    expect(res.body.errors).toEqual([{ path: 'editedPayload', message: expect.stringContaining('2 stages') }]);
  });

  it('returns a revision to stage 1 after changes are requested in stage 2', async () => {
    const { id } = await request('lead-then-finance');
    await vote(lead, id).expect(200);
    const asked = await vote(finance, id, { verdict: 'changes_requested', feedback: 'split it in two' }).expect(200);
    expect(asked.body).toMatchObject({ status: 'changes_requested', stage: { index: 2, name: 'Finance' } });
    const [webhook] = await outboxOf(id, 'approval.changes_requested');
    expect((webhook!.body as { data: Record<string, unknown> }).data).toMatchObject({ stage: { index: 2, name: 'Finance' } });

    const revised = (
      await org
        .request('post', `/v1/approvals/${id}/revisions`)
        .send({ payload: { amount: 2500 }, note: 'first half' })
        .expect(201)
    ).body;
    expect(revised).toMatchObject({ status: 'pending', revision: 2, stage: { index: 1, name: 'Team lead' }, quorum: 1, votes: [] });
    const [revisedWebhook] = await outboxOf(id, 'approval.revised');
    expect((revisedWebhook!.body as { data: Record<string, unknown> }).data).toMatchObject({ stage: { index: 1, name: 'Team lead' } });
    // Stage 1's reviewers decide again; finance, who asked for the changes, waits for stage 2.
    await vote(finance, id).expect(403);
    await vote(lead, id).expect(200);
    await vote(finance, id).expect(200);
    const approved = await vote(controller, id).expect(200);
    expect(approved.body).toMatchObject({ status: 'approved', revision: 2 });
    expect(approved.body.votes.map((cast: { stage: number }) => cast.stage)).toEqual([1, 2, 2]);
  });

  it('shows the current stage in the mail, the Slack message and the Teams card of a request', async () => {
    const { id } = await request('lead-then-finance');
    await vote(lead, id).expect(200);
    const approval = (await env.services.approvals.find(org.orgId, id))!;
    const links = { approve: 'a', reject: 'r', requestChanges: 'c', console: 'o', settings: 's' };
    const mail = approvalMail({ approval, changes: null, links });
    expect(mail.subject).toBe('Approval needed: pay · Stage 2 (Finance)');
    expect(mail.text).toContain('Stage:       2 (Finance)');
    expect(mail.text).toContain('The reviewers of stage 1 approved "pay"');
    const slack = JSON.stringify(approvalMessage(approval, 'https://console.test').blocks);
    expect(slack).toContain('*Stage:* 2 (Finance)');
    expect(slack).toContain('Stage 2 (Finance): waiting for a decision until');
    const teams = JSON.stringify(approvalCard(approval, 'https://console.test'));
    expect(teams).toContain('"text":"Stage: ","weight":"Bolder"},{"type":"TextRun","text":"2 (Finance)"}');
    expect(teams).toContain('Stage 2 (Finance): waiting for a decision until');
  });
});

describe('votes racing across stages', () => {
  const STAGES = 3;
  const QUORUM = 3;
  let voters: TestMember[];

  beforeAll(async () => {
    voters = await Promise.all(Array.from({ length: 12 }, (_, index) => createMember(env, org, 'reviewer', `racer-${index}@acme.test`)));
    await org
      .request('put', '/v1/policies/three-stages')
      .send({
        stages: Array.from({ length: STAGES }, (_, index) => ({
          name: `Stage ${index + 1}`,
          reviewers: { roles: ['reviewer'] },
          quorum: QUORUM,
        })),
      })
      .expect(200);
  });

  it('fills each stage to its quorum in turn, skipping none and completing each once, five times over', async () => {
    for (let round = 0; round < 5; round++) {
      const { id } = await request('three-stages');
      const answers = await Promise.all(voters.map((voter) => vote(voter, id)));
      const statuses = answers.map((answer) => answer.status);
      // Nine votes fill the three stages; the three that come after the approval find it settled.
      expect(statuses.filter((status) => status === 200)).toHaveLength(STAGES * QUORUM);
      expect(statuses.filter((status) => status === 409)).toHaveLength(voters.length - STAGES * QUORUM);

      const stored = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
      expect(stored).toMatchObject({ status: 'approved', stage: { index: STAGES } });
      const perStage = [1, 2, 3].map((index) => stored.votes.filter((cast: { stage: number }) => cast.stage === index).length);
      expect(perStage).toEqual([QUORUM, QUORUM, QUORUM]);

      const events = await eventsOf(id);
      expect(events.filter((event) => event.type === 'approval.stage_completed').map((event) => event.data.stage)).toEqual([
        { index: 1, name: 'Stage 1' },
        { index: 2, name: 'Stage 2' },
        { index: 3, name: 'Stage 3' },
      ]);
      expect(events.filter((event) => event.type === 'approval.approved')).toHaveLength(1);
      // Each vote recorded under its stage's quorum names the stage it counted in.
      const recorded = events.filter((event) => event.type === 'approval.vote_recorded');
      expect(recorded.map((event) => (event.data.stage as { index: number }).index)).toEqual([1, 1, 2, 2, 3, 3]);
      expect(await outboxOf(id, 'approval.approved')).toHaveLength(1);
    }
  });

  it('never counts a rejection racing the approvals in a later stage than the one it was cast in', async () => {
    const { id } = await request('three-stages');
    const [rejecter, ...approvers] = voters;
    const answers = await Promise.all([
      ...approvers.slice(0, 5).map((voter) => vote(voter, id)),
      vote(rejecter!, id, { verdict: 'rejected', feedback: 'no' }),
    ]);
    expect(answers.every((answer) => answer.status === 200 || answer.status === 409)).toBe(true);
    const stored = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(stored.status).toBe('rejected');
    const rejection = stored.votes.find((cast: { verdict: string }) => cast.verdict === 'rejected');
    expect(rejection.stage).toBe(stored.stage.index);
    // Stages before the rejecting one are complete; the rejecting one is not.
    for (let index = 1; index < stored.stage.index; index++) {
      expect(
        stored.votes.filter((cast: { stage: number; verdict: string }) => cast.stage === index && cast.verdict === 'approved'),
      ).toHaveLength(QUORUM);
    }
    expect(
      stored.votes.filter((cast: { stage: number; verdict: string }) => cast.stage === stored.stage.index && cast.verdict === 'approved')
        .length,
    ).toBeLessThan(QUORUM);
  });
});

describe('the release before stages, running beside this one', () => {
  /** A write as ag_write_batch takes it, from a process of the release before stages. */
  async function writeBatch(kind: 'create' | 'vote', item: unknown): Promise<string> {
    const [row] = await env.services.sql.query<{ outcomes: string[] }>(null, 'SELECT ag_write_batch($1, $2::jsonb) AS outcomes', [
      kind,
      JSON.stringify([item]),
    ]);
    return row!.outcomes[0]!;
  }

  it('creates requests under a policy with stages that still go through every stage, and records its votes', async () => {
    const { document, revision, version } = await env.services.policies.snapshot(org.orgId, 'lead-then-finance', { fresh: true });
    const creation = createApproval(
      { action: 'pay', payload: { amount: 5000 }, policyKey: 'lead-then-finance' },
      {
        kind: 'policy',
        policy: document!,
        verdict: { outcome: 'review', matchedRule: null },
        shadow: null,
        policyRevision: revision,
        policyVersion: version,
      },
      { actor: { type: 'api_key', id: org.keyId }, requester: { type: 'api_key', id: org.keyId } },
      new Date(),
    );
    // That release knows no stages: its row names none, and its reviewers and quorum are the policy row's (stage 1's).
    const { stages: _stages, stage: _stage, ...previousRow } = creationItem(org.orgId, creation, null).approval;
    expect(await writeBatch('create', { ...creationItem(org.orgId, creation, null), approval: previousRow })).toBe('created');
    const id = creation.approval.id;
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body).toMatchObject({ stage: { index: 1, name: 'Team lead' } });

    // Its vote names no stage and brings no stage events: the vote completes stage 1, recorded as a vote.
    const approval = (await new ApprovalStore(env.services.db, env.services.sql, org.orgId).findById(id))!;
    const actor = { type: 'user' as const, id: lead.id, email: lead.email };
    const { vote: cast, recorded, settling } = voteOn(approval, { verdict: 'approved' }, actor, new Date());
    const { stage: _castStage, ...previousVote } = cast;
    const { advancedEvents: _advanced, ...previousItem } = voteItem(
      org.orgId,
      id,
      { ...actor, role: 'reviewer' },
      'console',
      previousVote as typeof cast,
      recorded,
      settling,
    );
    expect(await writeBatch('vote', previousItem)).toBe('advanced');
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body).toMatchObject({
      status: 'pending',
      stage: { index: 2, name: 'Finance' },
      votes: [{ stage: 1 }],
    });
    expect((await eventsOf(id)).map((event) => event.type)).toEqual(['approval.created', 'approval.vote_recorded']);

    await vote(finance, id).expect(200);
    expect((await vote(controller, id).expect(200)).body).toMatchObject({ status: 'approved' });
  });
});
