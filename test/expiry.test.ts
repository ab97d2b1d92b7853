import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { approvalExpiryJob } from '../src/jobs/approval-expiry.js';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { DeadlineWatcher } from '../workers/deadline-watcher.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { eventually } from './support/eventually.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;

beforeAll(async () => {
  env = await createTestEnv({ EXPIRY_SWEEP_INTERVAL_MS: '500' });
  worker = await startWorkerRuntime(env.services, ['approval-expiry', 'maintenance', 'outbox-relay']);
  org = await env.createOrg();
  await org.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
});
afterAll(async () => {
  await worker.stop();
  await env.close();
});

type View = {
  id: string;
  status: string;
  expiresAt: string | null;
  createdAt: string;
  escalatedTo?: string;
  escalatedFrom?: string;
  feedback: string | null;
};

const create = async (policyKey: string, payload: Record<string, unknown> = {}) =>
  (await org.request('post', '/v1/approvals').send({ action: 'deploy', payload, policyKey, agent: 'bot' })).body as View;

const waitForSettlementOf = async (owner: TestOrg, id: string) =>
  (await owner.request('get', `/v1/approvals/${id}?wait=10`).expect(200)).body as View;
const waitForSettlement = (id: string) => waitForSettlementOf(org, id);

describe('expiry', () => {
  it('expires a pending approval within a second of its deadline, with its audit event and webhook', async () => {
    const approval = await create('short');
    const deadline = Date.parse(approval.expiresAt!);
    const settled = await waitForSettlement(approval.id);
    const lateness = Date.now() - deadline;
    expect(settled).toMatchObject({ status: 'expired', expiresAt: null, feedback: null });
    // Contract C3: an expiry is not a decision.
    expect(settled).toMatchObject({ decidedBy: null, decidedAt: null });
    expect(lateness).toBeLessThan(1000);

    const chain = await readChain(env.services.db, org.orgId);
    const expired = chain.find((event) => event.type === 'approval.expired' && event.data.approvalId === approval.id)!;
    expect(JSON.parse(expired.actor)).toEqual({ type: 'system', id: 'expiry-worker' });
    expect(expired.data).toMatchObject({ action: 'deploy', agent: 'bot' });
    const outbox = await env.services.db.outboxMessage.findFirstOrThrow({
      where: { eventId: (await webhookFor(approval.id, 'approval.expired')).id },
    });
    expect(outbox.body).toMatchObject({
      type: 'approval.expired',
      data: { approvalId: approval.id, status: 'expired', verdict: null, feedback: null },
    });
  });

  it('answers 409 to a decision after the expiry', async () => {
    const approval = await create('short');
    await waitForSettlement(approval.id);
    const res = await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(409);
    expect(res.body.code).toBe('conflict');
  });

  it('enqueues nothing at creation, and expires approvals whose job Redis lost through the sweeper', async () => {
    const expiries = env.services.jobs.queue(approvalExpiryJob);
    await expiries.pause();
    try {
      const approval = await create('short');
      const jobId = approvalExpiryJob.jobId!({ orgId: org.orgId, approvalId: approval.id });
      expect(await expiries.getJob(jobId)).toBeUndefined();
      // The deadline watcher hands it over once the deadline passes; the job is then lost.
      const job = await eventually(() => expiries.getJob(jobId));
      await job.remove();
      await expiries.resume();
      const settled = await waitForSettlement(approval.id);
      expect(settled.status).toBe('expired');
      const chain = await readChain(env.services.db, org.orgId);
      const expired = chain.find((event) => event.type === 'approval.expired' && event.data.approvalId === approval.id)!;
      expect(JSON.parse(expired.actor)).toEqual({ type: 'system', id: 'expiry-sweeper' });
    } finally {
      await expiries.resume();
    }
  });

  it('settles each approval once when several workers watch the deadlines', async () => {
    const second = await startWorkerRuntime(env.services, ['approval-expiry']);
    try {
      const approvals = await Promise.all(Array.from({ length: 30 }, () => create('short')));
      const settled = await Promise.all(approvals.map((approval) => waitForSettlement(approval.id)));
      expect(settled.map((approval) => approval.status)).toEqual(approvals.map(() => 'expired'));
      const chain = await readChain(env.services.db, org.orgId);
      expect(chainProblem(chain)).toBeNull();
      for (const approval of approvals) {
        const expired = chain.filter((event) => event.type === 'approval.expired' && event.data.approvalId === approval.id);
        expect(expired).toHaveLength(1);
        // Handed over by a watcher, not left to the sweeper.
        expect(JSON.parse(expired[0]!.actor)).toEqual({ type: 'system', id: 'expiry-worker' });
      }
    } finally {
      await second.stop();
    }
  });

  it("writes an organization's expiries falling due together in shared commits, each once", async () => {
    const batchSizes = async () => {
      const { values } = await env.services.metrics.writeBatchSize.get();
      const of = (name: string) =>
        values.find((value) => value.metricName === `approval_gate_write_batch_size_${name}` && value.labels.operation === 'timeout')
          ?.value ?? 0;
      return { items: of('sum'), batches: of('count') };
    };
    const before = await batchSizes();
    const approvals = await Promise.all(Array.from({ length: 40 }, () => create('short')));
    const settled = await Promise.all(approvals.map((approval) => waitForSettlement(approval.id)));
    expect(settled.map((approval) => approval.status)).toEqual(approvals.map(() => 'expired'));
    const after = await batchSizes();
    expect(after.items - before.items).toBe(40);
    // One commit per expiry made them queue behind each other on the organization's chain head.
    expect(after.batches - before.batches).toBeLessThan(40);
    const chain = await readChain(env.services.db, org.orgId);
    expect(chainProblem(chain)).toBeNull();
    for (const approval of approvals) {
      expect(chain.filter((event) => event.type === 'approval.expired' && event.data.approvalId === approval.id)).toHaveLength(1);
    }
  });

  // The expiry jobs start EXPIRY_LEAD_MS ahead: the decisions before the deadline land while they wait.
  it('gives a decision racing the expiry exactly one winner', async () => {
    const approvals = await Promise.all(Array.from({ length: 20 }, () => create('short')));
    const deadline = Math.max(...approvals.map((a) => Date.parse(a.expiresAt!)));
    // Fire decisions across the deadline, from 150 ms before to 150 ms after it.
    const decisions = approvals.map(async (approval, i) => {
      const at = Date.parse(approval.expiresAt!) - 150 + i * 15;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
      return org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' });
    });
    const responses = await Promise.all(decisions);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline + 1500 - Date.now())));

    const chain = await readChain(env.services.db, org.orgId);
    expect(chainProblem(chain)).toBeNull();
    for (const [i, approval] of approvals.entries()) {
      const terminal = chain.filter(
        (event) => event.data.approvalId === approval.id && ['approval.approved', 'approval.expired'].includes(event.type),
      );
      expect(terminal).toHaveLength(1);
      const stored = (await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body as View;
      expect(responses[i]!.status).toBe(stored.status === 'approved' ? 200 : 409);
      expect(terminal[0]!.type).toBe(`approval.${stored.status}`);
    }
  });
});

describe('escalation', () => {
  it('hands over along the escalateTo chain, linking each record to its successor', async () => {
    await org.request('put', '/v1/policies/tier3').send({ timeoutSeconds: 1 }).expect(200);
    await org.request('put', '/v1/policies/tier2').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'tier3' }).expect(200);
    await org.request('put', '/v1/policies/tier1').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'tier2' }).expect(200);

    const first = await create('tier1', { amount: 7 });
    const firstSettled = await waitForSettlement(first.id);
    expect(firstSettled).toMatchObject({ status: 'escalated', expiresAt: null, feedback: null, escalatedTo: expect.any(String) });
    expect(firstSettled).toMatchObject({ decidedBy: null, decidedAt: null });
    await org.asReviewer('post', `/v1/approvals/${first.id}/decision`).send({ verdict: 'approved' }).expect(409);

    const second = (await org.request('get', `/v1/approvals/${firstSettled.escalatedTo}`).expect(200)).body as View;
    expect(second).toMatchObject({ status: 'pending', escalatedFrom: first.id, payload: { amount: 7 }, action: 'deploy' });
    const secondSettled = await waitForSettlement(second.id);
    expect(secondSettled).toMatchObject({ status: 'escalated', escalatedFrom: first.id, escalatedTo: expect.any(String) });

    const third = await waitForSettlement(secondSettled.escalatedTo!);
    expect(third).toMatchObject({ status: 'expired', escalatedFrom: second.id });
    expect(third).not.toHaveProperty('escalatedTo');

    const webhook = await webhookFor(first.id, 'approval.escalated');
    expect(webhook).toMatchObject({ data: { status: 'escalated', verdict: null, escalatedTo: second.id } });
    const successorCreated = (await readChain(env.services.db, org.orgId)).find(
      (event) => event.type === 'approval.created' && event.data.approvalId === second.id,
    )!;
    expect(successorCreated.data).toMatchObject({ escalatedFrom: first.id, policyKey: 'tier2' });
  });

  it('evaluates the successor like a new request: approved at once, or an orphan', async () => {
    await org.request('put', '/v1/policies/allow-all').send({ defaultOutcome: 'allow' }).expect(200);
    await org
      .request('put', '/v1/policies/to-allow')
      .send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'allow-all' })
      .expect(200);
    await org.request('put', '/v1/policies/soon-gone').send({}).expect(200);
    await org
      .request('put', '/v1/policies/to-nowhere')
      .send({ timeoutSeconds: 3, onTimeout: 'escalate', escalateTo: 'soon-gone' })
      .expect(200);

    const toAllow = await waitForSettlement((await create('to-allow')).id);
    const approved = (await org.request('get', `/v1/approvals/${toAllow.escalatedTo}`).expect(200)).body as View;
    expect(approved).toMatchObject({ status: 'approved', expiresAt: null });

    // A request keeps the escalateTo it was created under: its target can be deleted meanwhile,
    // once no policy names it any more, and the successor is then an orphan.
    const pendingToNowhere = await create('to-nowhere');
    await org.request('put', '/v1/policies/to-nowhere').send({ timeoutSeconds: 1 }).expect(200);
    await org.request('delete', '/v1/policies/soon-gone').expect(204);
    const toNowhere = await waitForSettlement(pendingToNowhere.id);
    const orphan = (await org.request('get', `/v1/approvals/${toNowhere.escalatedTo}`).expect(200)).body as View;
    expect(orphan.status).toBe('pending');
    expect(Date.parse(orphan.expiresAt!) - Date.parse(orphan.createdAt)).toBe(env.config.ORPHAN_TIMEOUT_SECONDS * 1000);
    expect(await webhookFor(orphan.id, 'approval.orphaned')).toMatchObject({ data: { status: 'pending', verdict: null } });
  });

  it('escalates without a successor when escalateTo is null', async () => {
    await org.request('put', '/v1/policies/dead-end').send({ timeoutSeconds: 1, onTimeout: 'escalate' }).expect(200);
    const settled = await waitForSettlement((await create('dead-end')).id);
    expect(settled.status).toBe('escalated');
    expect(settled).not.toHaveProperty('escalatedTo');
    const webhook = await webhookFor(settled.id, 'approval.escalated');
    expect(webhook.data).not.toHaveProperty('escalatedTo');
  });
});

describe('deadline watcher', () => {
  it('hands due approvals over page by page in deadline order, and waits for the next deadline by the database clock', async () => {
    // An environment of its own with no worker: nothing but this watcher hands anything over.
    const quiet = await createTestEnv();
    try {
      const owner = await quiet.createOrg();
      await owner.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
      await owner.request('put', '/v1/policies/later').send({ timeoutSeconds: 5 }).expect(200);
      const createUnder = async (policyKey: string) =>
        (await owner.request('post', '/v1/approvals').send({ action: 'deploy', payload: {}, policyKey }).expect(201)).body as View;
      const due: View[] = [];
      for (let i = 0; i < 12; i++) due.push(await createUnder('short'));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(due.at(-1)!.expiresAt!) - Date.now() + 50)));
      const later = await createUnder('later');

      const expiries = quiet.services.jobs.queue(approvalExpiryJob);
      const handedOver = async () => (await expiries.getJobs(['waiting'])).map((job) => job.data.approvalId as string).sort();
      const watcher = new DeadlineWatcher(quiet.services.sql, quiet.services.jobs, quiet.services.logger, {
        maxWaitMs: 10_000,
        aheadMs: 0,
        leadMs: 0,
        pageSize: 5,
      });
      // Deadlines are in milliseconds, so two can tie: the id breaks the tie, as in the watcher's walk.
      const byDeadline = due
        .map((approval) => [approval.expiresAt!, approval.id] as const)
        .sort(([at, id], [otherAt, otherId]) => at.localeCompare(otherAt) || id.localeCompare(otherId))
        .map(([, id]) => id);
      expect(await watcher.handOverDue()).toBe(0); // a full page: look again at once
      expect(await handedOver()).toEqual(byDeadline.slice(0, 5).sort());
      expect(await watcher.handOverDue()).toBe(0);
      const waitMs = await watcher.handOverDue();
      expect(await handedOver()).toEqual([...byDeadline].sort());
      // The rest of the wait is until the later approval's deadline, about 5 s after its creation.
      const untilLater = Date.parse(later.expiresAt!) - Date.now();
      expect(waitMs).toBeGreaterThan(untilLater - 500);
      expect(waitMs).toBeLessThanOrEqual(untilLater + 500);

      // What was handed over is not read again; the wait is capped at maxWaitMs.
      const capped = new DeadlineWatcher(quiet.services.sql, quiet.services.jobs, quiet.services.logger, {
        maxWaitMs: 200,
        aheadMs: 0,
        leadMs: 0,
        pageSize: 5,
      });
      await expiries.obliterate({ force: true });
      expect(await watcher.handOverDue()).toBeGreaterThan(0);
      expect(await handedOver()).toEqual([]);
      expect(await capped.handOverDue()).toBe(0);
      expect(await handedOver()).toEqual(byDeadline.slice(0, 5).sort());
      expect(await capped.handOverDue()).toBe(0);
      expect(await capped.handOverDue()).toBe(200); // the later deadline is seconds away
    } finally {
      await quiet.close();
    }
  });
});

describe('deadline watcher, handing over ahead', () => {
  it('hands a deadline closer than aheadMs over as a job delayed until leadMs before it falls due, and no other', async () => {
    const quiet = await createTestEnv();
    try {
      const owner = await quiet.createOrg();
      await owner.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
      await owner.request('put', '/v1/policies/later').send({ timeoutSeconds: 10 }).expect(200);
      const createUnder = async (policyKey: string) =>
        (await owner.request('post', '/v1/approvals').send({ action: 'deploy', payload: {}, policyKey }).expect(201)).body as View;
      await createUnder('later');
      const soon = await createUnder('short');
      const deadline = Date.parse(soon.expiresAt!);

      const watcher = new DeadlineWatcher(quiet.services.sql, quiet.services.jobs, quiet.services.logger, {
        maxWaitMs: 400,
        aheadMs: 3_000,
        leadMs: 300,
        pageSize: 10,
      });
      const expiries = quiet.services.jobs.queue(approvalExpiryJob);
      const handedOver = () => expiries.getJobs(['delayed', 'waiting']);
      // The later deadline is about 10 s off, 7 s before it comes within 3 s: the wait is capped.
      expect(await watcher.handOverDue()).toBe(400);
      const [job, ...others] = await handedOver();
      expect(others).toEqual([]);
      expect(job!.data).toEqual({ orgId: owner.orgId, approvalId: soon.id });
      const dueAt = job!.timestamp + (job!.opts.delay ?? 0);
      // Never more than the lead ahead (the job would only be given back); late by no more than the look.
      expect(dueAt).toBeGreaterThanOrEqual(deadline - 300 - 1);
      expect(dueAt).toBeLessThan(deadline - 300 + 500);

      // Handed over once: the next look passes it by.
      await watcher.handOverDue();
      expect((await handedOver()).map((handed) => handed.id)).toEqual([job!.id]);
    } finally {
      await quiet.close();
    }
  });
});

describe('expiry job started ahead of the deadline', () => {
  it('reads the approval at once and settles it at its deadline, never before', async () => {
    const ahead = await createTestEnv({ EXPIRY_LEAD_MS: '450' });
    const runtime = await startWorkerRuntime(ahead.services, ['approval-expiry']);
    try {
      const owner = await ahead.createOrg();
      await owner.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
      const createShort = async () =>
        (await owner.request('post', '/v1/approvals').send({ action: 'deploy', payload: {}, policyKey: 'short' }).expect(201)).body as View;
      const expiring = await Promise.all(Array.from({ length: 10 }, createShort));
      const expiries = ahead.services.jobs.queue(approvalExpiryJob);
      const jobOf = (approval: View) => expiries.getJob(approvalExpiryJob.jobId!({ orgId: owner.orgId, approvalId: approval.id }));

      for (const approval of expiring) expect((await waitForSettlementOf(owner, approval.id)).status).toBe('expired');
      const chain = await readChain(ahead.services.db, owner.orgId);
      expect(chainProblem(chain)).toBeNull();
      for (const approval of expiring) {
        const deadline = Date.parse(approval.expiresAt!);
        // Started ahead: the wait happened in the job, not in the queue.
        expect((await jobOf(approval))!.processedOn!).toBeLessThan(deadline);
        const expired = chain.filter((event) => event.type === 'approval.expired' && event.data.approvalId === approval.id);
        expect(expired).toHaveLength(1);
        expect(Date.parse(expired[0]!.createdAt)).toBeGreaterThanOrEqual(deadline);
      }
    } finally {
      await runtime.stop();
      await ahead.close();
    }
  });
});

describe('expiry on a clock ahead of the database', () => {
  it("settles nothing while the database's clock has not reached the deadline, names a retry soon after, then settles once", async () => {
    const approval = await create('short');
    const deadline = Date.parse(approval.expiresAt!);
    const actor = { type: 'system' as const, id: 'expiry-worker' };
    // This process's clock runs 1.5 s ahead of the database's: by it, the deadline has passed.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 1_500 });
    const early = await env.services.approvals.timeOut(org.orgId, approval.id, actor).finally(() => vi.useRealTimers());
    if (early.kind !== 'not_due') throw new Error(`expected not_due, got ${early.kind}`);
    // Asked again shortly by the process's own clock (a retry, not a wait for a far deadline).
    const retryAt = early.retryAt.getTime();
    expect(retryAt - (deadline + 1_500)).toBeLessThan(1_000);
    expect(retryAt).toBeGreaterThan(deadline);
    const pending = (await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body as View;
    expect(pending.status).toBe('pending');
    const expiredEvents = async () =>
      (await readChain(env.services.db, org.orgId)).filter(
        (event) => event.type === 'approval.expired' && event.data.approvalId === approval.id,
      );
    expect(await expiredEvents()).toHaveLength(0);

    await sleep(Math.max(0, deadline - Date.now() + 50));
    const settled = await env.services.approvals.timeOut(org.orgId, approval.id, actor);
    // The expiry worker of this file may have settled it first: either way, once.
    expect(['settled', 'not_pending']).toContain(settled.kind);
    expect((await waitForSettlement(approval.id)).status).toBe('expired');
    expect(await expiredEvents()).toHaveLength(1);
    expect(chainProblem(await readChain(env.services.db, org.orgId))).toBeNull();
  });
});

describe('outbox relay', () => {
  it('marks every webhook event relayed and fans it out to subscribed endpoints', async () => {
    const endpoint = await env.services.db.webhookEndpoint.create({
      data: { orgId: org.orgId, url: 'http://127.0.0.1:9/hook', events: ['approval.rejected'], secret: 'whsec_test' },
    });
    const approval = await create('short');
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'rejected' }).expect(200);
    const event = await webhookFor(approval.id, 'approval.rejected');

    await eventually(
      async () => (await env.services.db.outboxMessage.findUniqueOrThrow({ where: { eventId: event.id } })).relayedAt !== null,
    );
    const deliveries = await env.services.db.webhookDelivery.findMany({ where: { eventId: event.id } });
    expect(deliveries).toEqual([expect.objectContaining({ endpointId: endpoint.id, status: 'pending', attemptCount: 0 })]);
    expect(await env.services.jobs.queue(webhookDeliveryJob).getJob(`${deliveries[0]!.id}-1`)).toBeDefined();
    await env.services.db.webhookEndpoint.delete({ where: { id: endpoint.id } });
  });

  it('fans the events of many concurrent decisions out once each, its passes running side by side', async () => {
    await org.request('put', '/v1/policies/long').send({ timeoutSeconds: 3600 }).expect(200);
    const endpoint = await env.services.db.webhookEndpoint.create({
      data: { orgId: org.orgId, url: 'http://127.0.0.1:9/hook', events: ['approval.approved'], secret: 'whsec_test' },
    });
    const approvals = await Promise.all(Array.from({ length: 60 }, () => create('long')));
    await Promise.all(
      approvals.map((approval) =>
        org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200),
      ),
    );
    const eventIds = (await Promise.all(approvals.map((approval) => webhookFor(approval.id, 'approval.approved')))).map((e) => e.id);
    await eventually(
      async () => (await env.services.db.outboxMessage.count({ where: { eventId: { in: eventIds }, relayedAt: null } })) === 0,
    );
    const deliveries = await env.services.db.webhookDelivery.findMany({ where: { endpointId: endpoint.id } });
    expect(deliveries.map((delivery) => delivery.eventId).sort()).toEqual([...eventIds].sort());
    await env.services.db.webhookEndpoint.delete({ where: { id: endpoint.id } });
  });
});

async function webhookFor(approvalId: string, type: string) {
  const rows = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: type } });
  const body = rows.map((row) => row.body as { id: string; data: Record<string, unknown> }).find((b) => b.data.approvalId === approvalId);
  if (!body) throw new Error(`no ${type} webhook for ${approvalId}`);
  return body;
}
