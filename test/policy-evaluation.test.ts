import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVALUATION_LIMITS, PolicyEvaluator, type RuleInput } from '../src/modules/policies/policy-rules.js';
import { policyDocumentSchema, type PolicyDocument } from '../src/modules/policies/policy-schemas.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain } from './support/audit-chain.js';
import { eventually } from './support/eventually.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const ints = (count: number) => Array.from({ length: count }, (_, index) => index);

function putPolicy(key: string, when: string[]) {
  return org.request('put', `/v1/policies/${key}`).send({ rules: when.map((expression) => ({ when: expression, outcome: 'allow' })) });
}

async function createdEvent(approvalId: string) {
  const chain = await readChain(env.services.db, org.orgId);
  return chain.find((event) => event.type === 'approval.created' && event.data.approvalId === approvalId)!.data;
}

describe('defect 1: policy evaluation is bounded', () => {
  it('runs matches with RE2: linear time, and RE2 syntax such as (?i)', async () => {
    await putPolicy('re2', ['action.matches("^(a+)+$")', 'action.matches("(?i)^A+!$")']).expect(200);
    // Backtracking takes 2^n steps on this input (minutes at n = 30); RE2 takes n.
    const res = await org.request('post', '/v1/approvals').send({ action: `${'a'.repeat(40)}!`, payload: {}, policyKey: 're2' });
    expect(res.status).toBe(200);
    expect(await createdEvent(res.body.id)).toMatchObject({ outcome: 'allow', matchedRule: 1 });
  });

  it('refuses at PUT what RE2 cannot run, comprehensions nested 3 deep, and a rule over the budget for every input', async () => {
    const cases: [string, RegExp][] = [
      ['action.matches("^(?=a)")', /not valid RE2 syntax/],
      ['action.matches("(a)\\\\1")', /not valid RE2 syntax/],
      ['payload.l.all(x, payload.l.all(y, payload.l.all(z, true)))', /nests comprehensions 3 deep; at most 2/],
      [`"${'a'.repeat(3000)}".matches("(a{100}){10}")`, /can never run within the evaluation budget/],
    ];
    for (const [when, message] of cases) {
      const res = await putPolicy('refused', ['true', when]);
      expect(res.status, when).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'rules.1.when', message: expect.stringMatching(message) }]);
    }
    await org.request('get', '/v1/policies/refused').expect(404);
  });

  it('fails closed to review, with the reason in the audit event, when a rule is over the budget for this input', async () => {
    await putPolicy('quadratic', ['payload.l.all(x, payload.l.exists(y, y == x + 1))']).expect(200);
    const small = await org.request('post', '/v1/approvals').send({ action: 'a', payload: { l: [1.0] }, policyKey: 'quadratic' });
    expect((await createdEvent(small.body.id)).evaluationError).toMatch(/no such overload/);

    const res = await org
      .request('post', '/v1/approvals')
      .send({ action: 'a', payload: { l: ints(1000) }, policyKey: 'quadratic' })
      .expect(201);
    expect(res.body.status).toBe('pending');
    expect(await createdEvent(res.body.id)).toMatchObject({
      outcome: 'review',
      // The rule that failed is the one named.
      matchedRule: 0,
      evaluationError: expect.stringMatching(
        /^rules\.0\.when: its cost bound for this input \([\d,]+ steps\) exceeds the budget of 10,000,000$/,
      ),
    });
  });

  it('still lets an earlier rule decide before a rule over the budget', async () => {
    await putPolicy('earlier', ['payload.vip == true', 'payload.l.all(x, payload.l.all(y, x != y + 0.5))']).expect(200);
    const res = await org
      .request('post', '/v1/approvals')
      .send({ action: 'a', payload: { vip: true, l: ints(5000) }, policyKey: 'earlier' });
    expect(res.status).toBe(200);
  });

  it('runs a rule too heavy to run inline on a worker thread, with the same outcome', async () => {
    await putPolicy('linear', ['payload.l.exists(x, x == 19999.0)']).expect(200);
    const res = await org.request('post', '/v1/approvals').send({ action: 'a', payload: { l: ints(20_000) }, policyKey: 'linear' });
    expect(res.status).toBe(200);
    expect(await createdEvent(res.body.id)).toMatchObject({ outcome: 'allow', matchedRule: 0 });
  });
});

describe('escalation successors, evaluated by the expiry worker', () => {
  let worker: WorkerRuntime;
  beforeAll(async () => {
    worker = await startWorkerRuntime(env.services, ['approval-expiry']);
  });
  afterAll(() => worker?.stop());

  it("fail closed the same way, with the reason in the successor's audit event", async () => {
    await putPolicy('heavy-successor', ['payload.l.all(x, payload.l.exists(y, y == x + 1))']).expect(200);
    await org
      .request('put', '/v1/policies/escalating')
      .send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'heavy-successor' })
      .expect(200);
    const { body } = await org
      .request('post', '/v1/approvals')
      .send({ action: 'a', payload: { l: ints(1000) }, policyKey: 'escalating' })
      .expect(201);
    const escalated = await eventually(async () => {
      const view = (await org.request('get', `/v1/approvals/${body.id}`).expect(200)).body;
      return view.status === 'escalated' ? view : null;
    });
    expect(await createdEvent(escalated.escalatedTo)).toMatchObject({
      policyKey: 'heavy-successor',
      outcome: 'review',
      escalatedFrom: body.id,
      evaluationError: expect.stringMatching(/exceeds the budget/),
    });
  });
});

describe('the hard time limit', () => {
  const document = (when: string): PolicyDocument => policyDocumentSchema.parse({ rules: [{ when, outcome: 'allow' }] });
  const input = (payload: Record<string, unknown>): RuleInput => ({ action: 'a', payload, agent: null, context: null });
  // Everything goes to the workers and no bound stops it first: only the time limit can.
  const limits = {
    ...DEFAULT_EVALUATION_LIMITS,
    workers: 1,
    timeLimitMs: 50,
    // Each stop replaces the worker, which loads through tsx here: seconds on a busy machine.
    queueLimitMs: 30_000,
    inlineCostSteps: 0,
    costBudgetSteps: Infinity,
  };
  const evaluator = new PolicyEvaluator(limits);
  afterAll(() => evaluator.close());

  it('stops an overrunning evaluation without blocking the event loop, fails closed, and replaces the worker', async () => {
    // Warm the worker up, so that the overrun below is the evaluation's own.
    expect(await evaluator.evaluate(document('true'), input({}), 'org-a')).toEqual({ outcome: 'allow', matchedRule: 0 });

    const order: string[] = [];
    const heavy = evaluator
      .evaluate(document('payload.l.all(x, payload.l.all(y, y != x + 0.5))'), input({ l: ints(3000) }), 'org-a')
      .then((verdict) => {
        order.push('evaluation');
        return verdict;
      });
    await new Promise((resolve) => setTimeout(resolve, 5));
    order.push('timer');
    expect(await heavy).toEqual({
      outcome: 'review',
      matchedRule: null,
      error: 'rules: evaluation took longer than the 50 ms time limit',
    });
    expect(order).toEqual(['timer', 'evaluation']);

    expect(await evaluator.evaluate(document('payload.ok == true'), input({ ok: true }), 'org-b')).toEqual({
      outcome: 'allow',
      matchedRule: 0,
    });
  });

  it('counts CPU time, not wall time, up to a wall time limit: a worker the machine leaves waiting is not stopped for it', async () => {
    const patient = new PolicyEvaluator({ ...limits, wallLimitMs: 60_000 });
    const impatient = new PolicyEvaluator({ ...limits, wallLimitMs: 100 });
    const rule = document('payload.l.all(x, payload.l.all(y, y != x + 0.5))');
    // Busy processes at normal priority on every core leave the low-priority workers almost no CPU.
    const hogs = Array.from({ length: 4 * availableParallelism() }, () =>
      spawn(process.execPath, ['-e', 'process.stdout.write("busy"); for (;;);'], { stdio: ['ignore', 'pipe', 'ignore'] }),
    );
    try {
      await Promise.all([patient, impatient].map((pool) => pool.evaluate(document('true'), input({}), 'org-a')));
      // Measured once every hog is spinning, not while they start.
      await Promise.all(hogs.map((hog) => new Promise((resolve) => hog.stdout.once('data', resolve))));
      const started = Date.now();
      const [waited, stopped] = await Promise.all(
        [patient, impatient].map((pool) => pool.evaluate(rule, input({ l: ints(200) }), 'org-a')),
      );
      expect(Date.now() - started).toBeGreaterThan(limits.timeLimitMs);
      expect(waited).toEqual({ outcome: 'allow', matchedRule: 0 });
      expect(stopped).toEqual({ outcome: 'review', matchedRule: null, error: 'rules: evaluation waited longer than 100 ms for CPU time' });
    } finally {
      for (const hog of hogs) hog.kill('SIGKILL');
      await Promise.all([patient.close(), impatient.close()]);
    }
  });

  it('takes waiting evaluations round-robin by organization', async () => {
    const finished: string[] = [];
    const slow = document('payload.l.all(x, payload.l.all(y, y != x + 0.5))');
    const runs = [
      ...['a1', 'a2', 'a3'].map((name) => evaluator.evaluate(slow, input({ l: ints(3000) }), 'org-a').then(() => finished.push(name))),
      evaluator.evaluate(document('true'), input({}), 'org-b').then(() => finished.push('b1')),
    ];
    await Promise.all(runs);
    // One job of org-a runs and another arrived before org-b's; org-b's must not wait for the third.
    expect(finished.at(-1)).not.toBe('b1');
  });
});
