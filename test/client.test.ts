import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpServer } from '../src/http/app.js';
import {
  ApiError,
  createApprovalGateClient,
  verifyWebhook,
  WebhookVerificationError,
  type ApprovalView,
  type RetryEvent,
} from '../src/client/index.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { listenOnLoopback } from './support/listen.js';
import { startTcpProxy } from './support/tcp-proxy.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;

beforeAll(async () => {
  env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001', EXPIRY_SWEEP_INTERVAL_MS: '200' });
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-expiry', 'webhook-delivery']);
  receiver = await startReceiver();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
  await org.request('put', '/v1/policies/escalating').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'review' }).expect(200);
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await env?.close();
});

const agentOf = (baseUrl: string, onRetry?: (retry: RetryEvent) => void) =>
  createApprovalGateClient({ baseUrl, apiKey: org.key, retry: { initialDelayMs: 50, ...(onRetry ? { onRetry } : {}) } });
const reviewerOf = (baseUrl: string) => createApprovalGateClient({ baseUrl, apiKey: org.reviewerKey });

/** The approvals of `action` in the organization, newest first. */
async function approvalsOf(action: string): Promise<ApprovalView[]> {
  return (await reviewerOf(env.baseUrl).listApprovals({ action })).approvals;
}

/** A web process's HTTP server over `services`, on `port`. */
async function listen(services: TestEnv['services'], port = 0): Promise<Server> {
  const server = createHttpServer(createApp(services)).listen(port, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

describe('requestApproval', () => {
  it('returns when another client decides, with the edited payload and the feedback', async () => {
    const agent = agentOf(env.baseUrl);
    const asking = agent.requestApproval({ action: 'refund', payload: { amount: 120 }, policyKey: 'review' }, { wait: 20 });
    const pending = await eventually(async () => (await approvalsOf('refund')).find((approval) => approval.status === 'pending'));
    await eventually(() => env.services.settlements.waiting === 1);

    await reviewerOf(env.baseUrl).decide(pending.id, { verdict: 'approved', feedback: 'only 100', editedPayload: { amount: 100 } });

    const approval = await asking;
    expect(approval).toMatchObject({ id: pending.id, status: 'approved', feedback: 'only 100', payload: { amount: 100 } });
  });

  it('returns the request still pending once its wait runs out', async () => {
    const started = Date.now();
    const approval = await agentOf(env.baseUrl).requestApproval({ action: 'slow', payload: {}, policyKey: 'review' }, { wait: 1 });
    expect(approval.status).toBe('pending');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses a negative wait before it creates anything', async () => {
    await expect(agentOf(env.baseUrl).requestApproval({ action: 'never', payload: {}, policyKey: 'review' }, { wait: -1 })).rejects.toThrow(
      'wait must be a number of seconds, 0 or more; got -1',
    );
    expect(await approvalsOf('never')).toEqual([]);
  });

  it('answers at once when the policy decides, and with wait 0 does not wait', async () => {
    const agent = agentOf(env.baseUrl);
    expect((await agent.requestApproval({ action: 'small', payload: {}, policyKey: 'allow' })).status).toBe('approved');
    expect((await agent.requestApproval({ action: 'later', payload: {}, policyKey: 'review' }, { wait: 0 })).status).toBe('pending');
  });

  it('follows an escalation to its successor and returns the successor’s decision', async () => {
    const asking = agentOf(env.baseUrl).requestApproval(
      { action: 'escalate-me', payload: { n: 1 }, policyKey: 'escalating' },
      { wait: 25 },
    );
    const successor = await eventually(async () =>
      (await approvalsOf('escalate-me')).find((approval) => approval.policyKey === 'review' && approval.status === 'pending'),
    );
    await reviewerOf(env.baseUrl).decide(successor.id, { verdict: 'rejected', feedback: 'no' });

    const approval = await asking;
    expect(approval).toMatchObject({ id: successor.id, status: 'rejected', feedback: 'no', escalatedFrom: expect.any(String) });
    const original = await reviewerOf(env.baseUrl).getApproval(approval.escalatedFrom!);
    expect(original).toMatchObject({ status: 'escalated', escalatedTo: successor.id, policyKey: 'escalating' });
  });

  it('resumes its wait through a restart of the web process it waits on', async () => {
    const first = await listen(env.services);
    const { port } = first.address() as AddressInfo;
    const baseUrl = `http://127.0.0.1:${port}`;
    const retries: RetryEvent[] = [];
    const asking = agentOf(baseUrl, (retry) => retries.push(retry)).requestApproval(
      { action: 'restart', payload: { step: 1 }, policyKey: 'review' },
      { wait: 25 },
    );
    const pending = await eventually(async () => (await approvalsOf('restart'))[0]);
    await eventually(() => env.services.settlements.waiting === 1);

    first.closeAllConnections();
    await new Promise((resolve) => first.close(resolve));
    await eventually(() => retries.some((retry) => /ECONNREFUSED/.test(retry.reason)));
    const peer = await env.createPeer();
    const second = await listen(peer.services, port);
    try {
      await eventually(() => env.services.settlements.waiting + peer.services.settlements.waiting === 1);
      await reviewerOf(env.baseUrl).decide(pending.id, { verdict: 'approved' });

      expect(await asking).toMatchObject({ id: pending.id, status: 'approved' });
      expect(await approvalsOf('restart')).toHaveLength(1);
    } finally {
      second.closeAllConnections();
      await new Promise((resolve) => second.close(resolve));
    }
  });

  it('reads again when the connection drops in the middle of an answer', async () => {
    const approval = await agentOf(env.baseUrl).requestApproval({ action: 'cut', payload: {}, policyKey: 'review' }, { wait: 0 });
    let requests = 0;
    // In front of the app: the first answer is cut after its headers and part of its body.
    const cutting = http.createServer(async (req, res) => {
      requests += 1;
      if (requests === 1) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":');
        setTimeout(() => res.destroy(), 20);
        return;
      }
      const answer = await fetch(`${env.baseUrl}${req.url}`, { headers: { authorization: req.headers.authorization ?? '' } });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? '' }).end(await answer.text());
    });
    const port = await listenOnLoopback(cutting);
    try {
      const retries: RetryEvent[] = [];
      const read = await agentOf(`http://127.0.0.1:${port}`, (retry) => retries.push(retry)).getApproval(approval.id);
      expect(read).toMatchObject({ id: approval.id, status: 'pending' });
      expect(requests).toBe(2);
      expect(retries).toHaveLength(1);
    } finally {
      cutting.closeAllConnections();
      await new Promise((resolve) => cutting.close(resolve));
    }
  });

  it('retries a 503 with the same idempotency key, and makes one request', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    const outage = await createTestEnv({}, { databasePort: proxy.port });
    try {
      const outageOrg = await outage.createOrg();
      await outageOrg.request('put', '/v1/policies/review').send({}).expect(200);
      const retries: RetryEvent[] = [];
      proxy.refuse();
      const asking = createApprovalGateClient({
        baseUrl: outage.baseUrl,
        apiKey: outageOrg.key,
        retry: { onRetry: (retry) => retries.push(retry) },
      }).requestApproval({ action: 'during-outage', payload: {}, policyKey: 'review' }, { wait: 20 });
      await eventually(() => retries.some((retry) => retry.reason === '503'));
      expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(5000);
      proxy.restore();

      const reviewer = createApprovalGateClient({ baseUrl: outage.baseUrl, apiKey: outageOrg.reviewerKey });
      const pending = await eventually(async () => (await reviewer.listApprovals({ status: 'pending' })).approvals[0], 20_000);
      await reviewer.decide(pending.id, { verdict: 'approved' });
      expect(await asking).toMatchObject({ id: pending.id, status: 'approved' });
      expect((await reviewer.listApprovals({ action: 'during-outage' })).approvals).toHaveLength(1);
    } finally {
      await outage.close();
      await proxy.close();
    }
  }, 120_000);

  it('gives up after its retry budget with the 503 as an ApiError', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    const outage = await createTestEnv({}, { databasePort: proxy.port });
    try {
      const outageOrg = await outage.createOrg();
      proxy.refuse();
      const client = createApprovalGateClient({ baseUrl: outage.baseUrl, apiKey: outageOrg.key, retry: { budgetMs: 1000 } });
      const error = await client.listApprovals().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 503, code: 'unavailable', retryAfterSeconds: 5 });
    } finally {
      await outage.close();
      await proxy.close();
    }
  }, 120_000);
});

describe('request changes', () => {
  /** The pending request of `action`, once it is waited on. */
  async function waitedOn(action: string, revision: number): Promise<ApprovalView> {
    const pending = await eventually(async () =>
      (await approvalsOf(action)).find((approval) => approval.status === 'pending' && approval.revision === revision),
    );
    await eventually(() => env.services.settlements.waiting === 1);
    return pending;
  }

  it('loops through onChangesRequested until approved: request changes, revise, approve', async () => {
    const asked: [string, unknown][] = [];
    const asking = agentOf(env.baseUrl).requestApproval(
      { action: 'refund-loop', payload: { amount: 120 }, policyKey: 'review' },
      {
        wait: 30,
        onChangesRequested: (feedback, suggested) => {
          asked.push([feedback, suggested]);
          return { amount: (suggested?.amount as number) ?? 0, reason: 'as suggested' };
        },
      },
    );
    const reviewer = reviewerOf(env.baseUrl);
    const first = await waitedOn('refund-loop', 1);
    await reviewer.decide(first.id, { verdict: 'changes_requested', feedback: 'Only 100.', suggestedPayload: { amount: 100 } });
    const second = await waitedOn('refund-loop', 2);
    expect(second).toMatchObject({ id: first.id, payload: { amount: 100, reason: 'as suggested' } });
    await reviewer.decide(second.id, { verdict: 'approved', revision: 2 });

    expect(await asking).toMatchObject({ id: first.id, status: 'approved', revision: 2, payload: { amount: 100, reason: 'as suggested' } });
    expect(asked).toEqual([['Only 100.', { amount: 100 }]]);
    expect(await approvalsOf('refund-loop')).toHaveLength(1);
  });

  it('stops with the request for changes when the handler answers null, or when there is none', async () => {
    const reviewer = reviewerOf(env.baseUrl);
    for (const [action, onChangesRequested] of [
      ['refund-stop', () => null],
      ['refund-none', undefined],
    ] as const) {
      const asking = agentOf(env.baseUrl).requestApproval(
        { action, payload: { amount: 120 }, policyKey: 'review' },
        { wait: 30, ...(onChangesRequested ? { onChangesRequested } : {}) },
      );
      const pending = await waitedOn(action, 1);
      await reviewer.decide(pending.id, { verdict: 'changes_requested', feedback: 'No weekend refunds.' });
      expect(await asking).toMatchObject({
        id: pending.id,
        status: 'changes_requested',
        feedback: 'No weekend refunds.',
        suggestedPayload: null,
        revision: 1,
      });
    }
  });

  it('revises with revise(id, { payload, note }), and refuses another principal with an ApiError', async () => {
    const agent = agentOf(env.baseUrl);
    const reviewer = reviewerOf(env.baseUrl);
    const created = await agent.requestApproval({ action: 'refund-revise', payload: { amount: 120 }, policyKey: 'review' }, { wait: 0 });
    await reviewer.decide(created.id, { verdict: 'changes_requested', feedback: 'Say why.' });
    const refused = await reviewer.revise(created.id, { payload: { amount: 1 } }).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 403, code: 'forbidden' });
    const revised = await agent.revise(created.id, { payload: { amount: 120, why: 'late parcel' }, note: 'Added the reason.' });
    expect(revised).toMatchObject({ status: 'pending', revision: 2 });
    expect(revised.revisions[1]).toMatchObject({ revision: 2, note: 'Added the reason.', feedback: 'Say why.' });
    await reviewer.decide(created.id, { verdict: 'rejected', feedback: 'Still no.' });
    expect(await agent.waitForDecision(revised, { wait: 5 })).toMatchObject({ status: 'rejected', feedback: 'Still no.' });
  });
});

describe('ApiError', () => {
  it('carries the problem details of a refused request', async () => {
    const error = await agentOf(env.baseUrl)
      .requestApproval({ action: '', payload: [] as unknown as Record<string, unknown>, policyKey: 'review' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    const problem = error as ApiError;
    expect(problem).toMatchObject({ status: 422, code: 'validation_failed', detail: expect.any(String) });
    expect(problem.fieldError('payload')).toBe('payload must be an object');
    expect(problem.errors.map((field) => field.path)).toEqual(expect.arrayContaining(['action', 'payload']));
  });

  it('is thrown for an unknown approval, and for a decision by the key that asked', async () => {
    const agent = agentOf(env.baseUrl);
    await expect(agent.getApproval('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const approval = await agent.requestApproval({ action: 'self', payload: {}, policyKey: 'review' }, { wait: 0 });
    await expect(agent.decide(approval.id, { verdict: 'approved' })).rejects.toMatchObject({ name: 'ApiError', status: 403 });
  });
});

describe('verifyWebhook', () => {
  it('accepts a real delivery and refuses it tampered with', async () => {
    const { secret } = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/client'), events: ['approval.approved'] })
        .expect(201)
    ).body as { secret: string };
    const approval = await agentOf(env.baseUrl).requestApproval({ action: 'hooked', payload: { a: 1 }, policyKey: 'allow' });
    const [delivery] = await receiver.waitFor(() => receiver.at('/client').length > 0).then(() => receiver.at('/client'));

    const event = verifyWebhook({ rawBody: delivery!.rawBody, headers: delivery!.headers, secret });
    expect(event).toMatchObject({ type: 'approval.approved', data: { approvalId: approval.id, payload: { a: 1 } } });

    const tampered = delivery!.rawBody.replace(/"a": ?1/, '"a":2');
    expect(tampered).not.toBe(delivery!.rawBody);
    expect(() => verifyWebhook({ rawBody: tampered, headers: delivery!.headers, secret })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook({ rawBody: delivery!.rawBody, headers: delivery!.headers, secret: `${secret}x` })).toThrow(
      expect.objectContaining({ reason: 'no_matching_signature' }),
    );
  });
});
