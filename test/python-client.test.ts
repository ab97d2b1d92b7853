import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpServer } from '../src/http/app.js';
import { APPROVAL_STATUSES, approvalViewSchema } from '../src/modules/approvals/approval-schemas.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { listenOnLoopback } from './support/listen.js';
import { PYTHON_CLIENT_PATH, startPython } from './support/python-client.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * The Python client (clients/python) against the real service: each case is a small Python
 * program, run by `python3` as an agent would run it, printing what it sees as JSON lines.
 */

/** What every program starts with: the client of AG_URL with AG_KEY, quick retries told as lines, and `emit`. */
const PRELUDE = `
import json, os, sys
from approval_gate import ApiError, ApprovalGate, RetryPolicy, WebhookVerificationError, verify_webhook

def emit(value):
    print(json.dumps(value), flush=True)

def waiting(pending):
    emit({"waiting": pending["id"], "revision": pending["revision"]})

def error_of(error):
    return {"status": error.status, "type": error.type, "title": error.title, "detail": error.detail,
            "code": error.code, "errors": error.errors, "retry_after": error.retry_after_seconds}

gate = ApprovalGate(os.environ["AG_URL"], os.environ["AG_KEY"],
                    retry=RetryPolicy(initial_delay=0.05, on_retry=lambda event: emit({"retry": event.reason})))
`;

interface PythonRun {
  lines: Record<string, unknown>[];
  /** The first line `probe` accepts, once printed. */
  line: (probe: (line: Record<string, unknown>) => boolean, timeoutMs?: number) => Promise<Record<string, unknown>>;
  /** The lines once the program has exited with status 0 (rejects with its stderr otherwise). */
  done: Promise<Record<string, unknown>[]>;
}

function runPython(program: string, { url, key, input }: { url: string; key: string; input?: unknown }): PythonRun {
  const python = startPython(PRELUDE + program, { url, key, env: { AG_INPUT: JSON.stringify(input ?? null) } });
  const lines: Record<string, unknown>[] = [];
  const read = (async () => {
    for await (const line of python.lines) lines.push(line);
  })();
  const done = Promise.all([read, python.exited]).then(() => lines);
  running.push(done.catch(() => {}));
  // Generous: a python3 process takes seconds to start on a loaded machine.
  const line = (probe: (line: Record<string, unknown>) => boolean, timeoutMs = 30_000) =>
    Promise.race([eventually(() => lines.find(probe), timeoutMs), done.then(() => eventually(() => lines.find(probe), 1))]);
  return { lines, line, done };
}

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;
const running: Promise<unknown>[] = [];

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
  await Promise.all(running);
  await worker?.stop();
  await receiver?.close();
  await env?.close();
});

const agent = () => ({ url: env.baseUrl, key: org.key });

/** The approvals of `action`, newest first. */
async function approvalsOf(action: string): Promise<{ id: string; status: string; revision: number }[]> {
  return (await org.asReviewer('get', `/v1/approvals?action=${action}`).expect(200)).body.approvals;
}

/** A web process's HTTP server over `services`, on `port`. */
async function listen(services: TestEnv['services'], port = 0): Promise<Server> {
  const server = createHttpServer(createApp(services)).listen(port, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

async function close(server: Server) {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

describe('the Python client', () => {
  it('request_approval waits for the reviewer and returns the edited payload and the feedback; wait=False returns at once', async () => {
    const run = runPython(
      `emit({"at_once": gate.request_approval("py-now", {"a": 1}, "review", wait=False)["status"]})
approval = gate.request_approval("py-refund", {"amount": 120}, "review", agent="py-bot", context={"why": "damaged"}, on_wait=waiting)
emit({"status": approval["status"], "payload": approval["payload"], "feedback": approval["feedback"], "id": approval["id"]})`,
      agent(),
    );
    await run.line((line) => line.at_once === 'pending');
    const waiting = await run.line((line) => typeof line.waiting === 'string');
    await eventually(() => env.services.settlements.waiting === 1);
    await org
      .asReviewer('post', `/v1/approvals/${String(waiting.waiting)}/decision`)
      .send({ verdict: 'approved', feedback: 'at most 100', editedPayload: { amount: 100 } })
      .expect(200);
    expect((await run.done).at(-1)).toEqual({ status: 'approved', payload: { amount: 100 }, feedback: 'at most 100', id: waiting.waiting });
    expect(await approvalsOf('py-refund')).toHaveLength(1);
  });

  it('follows an escalation to its successor and returns the successor’s decision', async () => {
    const run = runPython(
      `approval = gate.request_approval("py-escalate", {}, "escalating", wait=60, on_wait=waiting)
emit({"id": approval["id"], "status": approval["status"], "feedback": approval["feedback"], "from": approval.get("escalatedFrom")})`,
      agent(),
    );
    await run.line((line) => 'waiting' in line);
    // The policy escalates after 1 s: the successor is the pending one of two.
    const successor = await eventually(async () => {
      const chain = await approvalsOf('py-escalate');
      return chain.length === 2 ? chain.find((approval) => approval.status === 'pending') : undefined;
    }, 15_000);
    await org.asReviewer('post', `/v1/approvals/${successor.id}/decision`).send({ verdict: 'rejected', feedback: 'no' }).expect(200);
    const [original] = (await approvalsOf('py-escalate')).filter((approval) => approval.id !== successor.id);
    expect((await run.done).at(-1)).toEqual({ id: successor.id, status: 'rejected', feedback: 'no', from: original!.id });
  });

  it('resumes its wait through a restart of the web process it waits on', async () => {
    const first = await listen(env.services);
    const { port } = first.address() as AddressInfo;
    const run = runPython(
      `approval = gate.request_approval("py-restart", {"step": 1}, "review", wait=60, on_wait=waiting)
emit({"id": approval["id"], "status": approval["status"]})`,
      { url: `http://127.0.0.1:${port}`, key: org.key },
    );
    const pending = { id: String((await run.line((line) => 'waiting' in line)).waiting) };
    await eventually(() => env.services.settlements.waiting === 1);

    await close(first);
    await run.line((line) => /Connection ?Refused|Errno 111/i.test(String(line.retry)));
    const peer = await env.createPeer();
    const second = await listen(peer.services, port);
    try {
      await eventually(() => env.services.settlements.waiting + peer.services.settlements.waiting === 1, 15_000);
      await org.asReviewer('post', `/v1/approvals/${pending.id}/decision`).send({ verdict: 'approved' }).expect(200);
      expect((await run.done).at(-1)).toEqual({ id: pending.id, status: 'approved' });
      expect(await approvalsOf('py-restart')).toHaveLength(1);
    } finally {
      await close(second);
    }
  });

  it('retries a 504 that came after the creation landed, with the same idempotency key, and a dropped answer; one request is made', async () => {
    let posts = 0;
    let reads = 0;
    // A gateway in front of the service: it loses the answer to the first creation (504, with
    // retry-after) after passing it on, and cuts the first read's answer in the middle.
    const gateway = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const answer = await fetch(`${env.baseUrl}${req.url}`, {
        method: req.method,
        headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
        ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
      });
      const text = await answer.text();
      if (req.method === 'POST' && ++posts === 1) {
        res.writeHead(504, { 'content-type': 'text/plain', 'retry-after': '1' }).end('gateway timeout');
        return;
      }
      if (req.method === 'GET' && ++reads === 1) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(text.slice(0, 10));
        setTimeout(() => res.destroy(), 20);
        return;
      }
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? '' }).end(text);
    });
    const port = await listenOnLoopback(gateway);
    try {
      const started = Date.now();
      const run = runPython(
        `approval = gate.request_approval("py-gateway", {}, "review", wait=False)
emit({"created": approval["id"]})
emit({"read": gate.get_approval(approval["id"])["status"]})`,
        { url: `http://127.0.0.1:${port}`, key: org.key },
      );
      const lines = await run.done;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(lines.filter((line) => 'retry' in line).map((line) => String(line.retry))).toEqual([
        '504',
        expect.stringMatching(/Incomplete|Reset|Disconnected/),
      ]);
      const listed = await approvalsOf('py-gateway');
      expect(listed).toHaveLength(1);
      expect(lines).toContainEqual({ created: listed[0]!.id });
      expect(lines).toContainEqual({ read: 'pending' });
      expect(posts).toBe(2);
    } finally {
      await close(gateway);
    }
  });

  it('gives up after its retry budget with the 503 as an ApiError carrying retry-after', async () => {
    const unavailable = http.createServer((_req, res) =>
      res
        .writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' })
        .end(JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'down', code: 'unavailable' })),
    );
    const port = await listenOnLoopback(unavailable);
    try {
      const run = runPython(
        `gate = ApprovalGate(os.environ["AG_URL"], os.environ["AG_KEY"], retry=RetryPolicy(budget=2.5))
try:
    gate.list_approvals()
except ApiError as error:
    emit(error_of(error))`,
        { url: `http://127.0.0.1:${port}`, key: org.key },
      );
      expect((await run.done).at(-1)).toMatchObject({ status: 503, code: 'unavailable', detail: 'down', retry_after: 1 });
    } finally {
      await close(unavailable);
    }
  });

  it('raises ApiError with the problem details (a field refused, an unknown approval, a decision by the key that asked), and declares the API’s fields', async () => {
    const run = runPython(
      `from typing import get_args
from approval_gate import Approval, ApprovalStatus
emit({"fields": sorted(Approval.__annotations__), "statuses": sorted(get_args(ApprovalStatus))})
for attempt in (lambda: gate.request_approval("py-bad", {"note": "a\\u0000b"}, "review"),
                lambda: gate.get_approval("00000000-0000-4000-8000-000000000000")):
    try:
        attempt()
    except ApiError as error:
        emit(error_of(error) | {"field": error.field_error("payload.note")})
approval = gate.request_approval("py-self", {}, "review", wait=False)
try:
    gate.decide(approval["id"], "approved")
except ApiError as error:
    emit(error_of(error))`,
      agent(),
    );
    const [declared, invalid, missing, self] = await run.done;
    // The Python types are written by hand: they must name what the API's schema does.
    expect(declared).toEqual({ fields: Object.keys(approvalViewSchema.shape).sort(), statuses: [...APPROVAL_STATUSES].sort() });
    expect(invalid).toMatchObject({
      status: 422,
      code: 'validation_failed',
      type: expect.any(String),
      title: expect.any(String),
      field: 'payload.note must not contain the NUL character (U+0000)',
      errors: [{ path: 'payload.note', message: expect.any(String) }],
    });
    expect(missing).toMatchObject({ status: 404, code: 'not_found', field: null });
    expect(self).toMatchObject({ status: 403 });
  });

  it('loops through on_changes_requested until approved, and decides and lists as a reviewer', async () => {
    const run = runPython(
      `def revise(feedback, suggested, approval):
    emit({"feedback": feedback, "suggested": suggested, "revision": approval["revision"]})
    return suggested
approval = gate.request_approval("py-changes", {"amount": 120}, "review", wait=60, on_wait=waiting, on_changes_requested=revise)
emit({"status": approval["status"], "revision": approval["revision"], "payload": approval["payload"]})`,
      agent(),
    );
    const first = { id: String((await run.line((line) => 'waiting' in line && line.revision === 1)).waiting) };
    await eventually(() => env.services.settlements.waiting === 1);
    await org
      .asReviewer('post', `/v1/approvals/${first.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Only 100.', suggestedPayload: { amount: 100 } })
      .expect(200);
    await run.line((line) => line.feedback === 'Only 100.');
    await run.line((line) => line.revision === 2 && 'waiting' in line);
    const decided = await runPython(
      `page = gate.list_approvals(status=["pending"], action="py-changes", limit=5)
emit({"listed": [approval["id"] for approval in page["approvals"]], "next": page["nextCursor"]})
emit({"decided": gate.decide(page["approvals"][0]["id"], "approved", revision=2)["status"]})`,
      { url: env.baseUrl, key: org.reviewerKey },
    ).done;
    expect(decided).toEqual([{ listed: [first.id], next: null }, { decided: 'approved' }]);
    const lines = await run.done;
    expect(lines).toContainEqual({ feedback: 'Only 100.', suggested: { amount: 100 }, revision: 1 });
    expect(lines.at(-1)).toEqual({ status: 'approved', revision: 2, payload: { amount: 100 } });
  });

  it('runs the agent of docs/python.md as written', async () => {
    await org.request('put', '/v1/policies/refunds').send({ defaultOutcome: 'allow' }).expect(200);
    const markdown = await readFile(path.resolve(import.meta.dirname, '../docs/python.md'), 'utf8');
    const program = [...markdown.matchAll(/^```python\n([\s\S]*?)^```$/gm)]
      .map((match) => match[1]!)
      .find((code) => code.startsWith('# agent.py'));
    const child = spawn('python3', ['-c', program!], {
      env: {
        PATH: process.env.PATH ?? '',
        PYTHONPATH: PYTHON_CLIENT_PATH,
        PYTHONDONTWRITEBYTECODE: '1',
        APPROVAL_GATE_URL: env.baseUrl,
        APPROVAL_GATE_API_KEY: org.key,
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = await once(child, 'exit');
    expect(output).toBe('refunded 120 on A-17\n');
    expect(code).toBe(0);
  });

  it('verify_webhook accepts a real delivery by either signature scheme, and refuses it tampered, stale or under another secret', async () => {
    const { secret } = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/python'), events: ['approval.approved'] })
        .expect(201)
    ).body as { secret: string };
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'py-hooked', payload: { a: 1 }, policyKey: 'allow' })
      .expect(200);
    await receiver.waitFor(() => receiver.at('/python').length > 0);
    const delivery = receiver.at('/python')[0]!;
    const pick = (prefix: RegExp) => Object.fromEntries(Object.entries(delivery.headers).filter(([name]) => prefix.test(name)));
    const input = {
      body: delivery.rawBody,
      ours: pick(/^x-service-/),
      standard: pick(/^webhook-/),
      secret,
    };
    const run = runPython(
      `import re
input = json.loads(os.environ["AG_INPUT"])
body = input["body"].encode()
tampered = re.sub(rb'"a": ?1', b'"a":2', body)
assert tampered != body
def check(label, **kwargs):
    try:
        event = verify_webhook(kwargs.pop("raw_body", body), kwargs.pop("headers"), kwargs.pop("secret", input["secret"]), **kwargs)
        emit({label: event["type"]})
    except WebhookVerificationError as error:
        emit({label: error.reason})
upper = {name.upper(): value for name, value in input["ours"].items()}
check("ours", headers=upper)
check("standard", headers=input["standard"])
check("rotating", headers=input["standard"], secret=["whsec_" + "A" * 43 + "=", input["secret"]])
check("tampered", headers=input["ours"], raw_body=tampered)
check("tampered_standard", headers=input["standard"], raw_body=tampered)
check("other_secret", headers=input["ours"], secret="whsec_" + "B" * 43 + "=")
check("stale", headers=input["ours"], now=int(input["ours"]["x-service-timestamp"]) + 301)
check("missing", headers={})`,
      { ...agent(), input },
    );
    expect(Object.assign({}, ...(await run.done))).toEqual({
      ours: 'approval.approved',
      standard: 'approval.approved',
      rotating: 'approval.approved',
      tampered: 'no_matching_signature',
      tampered_standard: 'no_matching_signature',
      other_secret: 'no_matching_signature',
      stale: 'timestamp_outside_tolerance',
      missing: 'missing_header',
    });
  });
});
