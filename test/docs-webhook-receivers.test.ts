import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { freePort, listenOnLoopback } from './support/listen.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The two receivers of docs/webhooks.md, run exactly as a reader would copy them: each code block
 * is written to a file and started as its own process (node, python3), the service delivers a real
 * signed webhook to it, and a tampered copy of that delivery is refused.
 */

const DOC = path.resolve(import.meta.dirname, '../docs/webhooks.md');

/** The fenced block of `language` whose first line names `file` (`// receiver.mjs…`, `# receiver.py…`). */
function codeBlock(markdown: string, language: string, file: string): string {
  const blocks = [...markdown.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)];
  const block = blocks.find(([, lang, code]) => lang === language && code!.split('\n')[0]!.includes(file));
  if (!block) throw new Error(`docs/webhooks.md has no ${language} block starting with ${file}`);
  return block[2]!;
}

interface Recorded {
  headers: Record<string, string>;
  rawBody: Buffer;
  status: number;
}

/**
 * Stands between the service and a receiver, passing each delivery on unchanged and recording its
 * exact headers and bytes (and the receiver's answer), so that the test can replay and tamper with
 * a delivery the service really signed.
 */
async function startRecordingProxy(target: () => string) {
  const recorded: Recorded[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => /^(x-service-|webhook-|content-type)/.test(name)),
    ) as Record<string, string>;
    const answer = await fetch(target(), { method: 'POST', headers, body: rawBody });
    recorded.push({ headers, rawBody, status: answer.status });
    res.writeHead(answer.status).end();
  });
  const port = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}/hooks/approvals`, recorded, close: () => server.close() };
}

interface RunningReceiver {
  process: ChildProcess;
  output: () => string;
  url: string;
}

async function startReceiver(command: string, file: string, secret: string): Promise<RunningReceiver> {
  const port = await freePort();
  const child = spawn(command, [file], {
    env: { ...process.env, APPROVAL_GATE_WEBHOOK_SECRET: secret, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const spawnFailure = new Promise<never>((_, reject) => child.once('error', reject));
  await Promise.race([eventually(() => output.includes(`listening on ${port}`), 15_000), spawnFailure]);
  return { process: child, output: () => output, url: `http://127.0.0.1:${port}/hooks/approvals` };
}

const post = (url: string, headers: Record<string, string>, body: Buffer | string) =>
  fetch(url, { method: 'POST', headers, body }).then((res) => res.status);

let env: TestEnv;
let worker: WorkerRuntime;
let directory: string;
const running: RunningReceiver[] = [];

beforeAll(async () => {
  env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001' });
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery']);
  directory = await mkdtemp(path.join(tmpdir(), 'docs-receivers-'));
  const markdown = await readFile(DOC, 'utf8');
  await writeFile(path.join(directory, 'receiver.mjs'), codeBlock(markdown, 'js', 'receiver.mjs'));
  await writeFile(path.join(directory, 'receiver.py'), codeBlock(markdown, 'python', 'receiver.py'));
});
afterAll(async () => {
  for (const receiver of running) receiver.process.kill();
  await worker?.stop();
  await env?.close();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe.each([
  ['Node', 'node', 'receiver.mjs'],
  ['Python', 'python3', 'receiver.py'],
])('the %s receiver of docs/webhooks.md', (_name, command, file) => {
  it('accepts a real delivery from the service, and refuses it tampered, re-signed with another secret, or stale', async () => {
    const org = await env.createOrg();
    await org.request('put', '/v1/policies/allow-all').send({ defaultOutcome: 'allow' }).expect(200);

    // The endpoint's secret exists only once it is registered, and the receiver needs it to start:
    // register the proxy's URL, then start the receiver the proxy passes deliveries on to.
    let receiver: RunningReceiver | undefined;
    const proxy = await startRecordingProxy(() => receiver!.url);
    const endpoint = await org
      .request('post', '/v1/webhooks')
      .send({ url: proxy.url, events: ['approval.approved'] })
      .expect(201);
    const secret = endpoint.body.secret as string;
    receiver = await startReceiver(command, path.join(directory, file), secret);
    running.push(receiver);

    const approval = await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 40 }, policyKey: 'allow-all' })
      .expect(200);

    const delivered = await eventually(() => proxy.recorded.find((entry) => entry.status === 204), 20_000);
    await eventually(() => receiver.output().includes(`accepted approval.approved ${approval.body.id} approved`));
    // The worker records the attempt once the answer is back, a moment after the receiver acted on it.
    const succeeded = await eventually(async () => {
      const log = await org.request('get', `/v1/webhooks/${endpoint.body.id}/deliveries`).expect(200);
      return log.body.deliveries.find((delivery: { status: string }) => delivery.status === 'succeeded');
    });
    expect(succeeded.attempts.at(-1)).toMatchObject({ statusCode: 204 });

    const { headers, rawBody } = delivered;
    const event = JSON.parse(rawBody.toString('utf8')) as { data: { payload: { amount: number } } };
    // The same bytes again are still authentic (a retry), and acted on once.
    expect(await post(receiver.url, headers, rawBody)).toBe(204);

    const tampered = JSON.stringify({ ...event, data: { ...event.data, payload: { amount: 40_000 } } });
    expect(await post(receiver.url, headers, tampered)).toBe(400);

    const timestamp = headers['x-service-timestamp']!;
    const signWith = (key: string, at: string, body: Buffer | string) =>
      `v1=${createHmac('sha256', key).update(`${at}.`).update(body).digest('hex')}`;
    const forged = { ...headers, 'x-service-signature': signWith('whsec_c29tZW9uZSBlbHNlJ3Mgc2VjcmV0', timestamp, tampered) };
    expect(await post(receiver.url, forged, tampered)).toBe(400);

    const stale = String(Number(timestamp) - 3600);
    expect(
      await post(
        receiver.url,
        { ...headers, 'x-service-timestamp': stale, 'x-service-signature': signWith(secret, stale, rawBody) },
        rawBody,
      ),
    ).toBe(400);
    expect(await post(receiver.url, { ...headers, 'x-service-signature': '' }, rawBody)).toBe(400);

    // Its lines may reach this process a moment after its answers do.
    const lines = (pattern: RegExp) => receiver.output().match(pattern)?.length ?? 0;
    await eventually(() => lines(/^rejected: /gm) === 4);
    expect(lines(/^accepted /gm)).toBe(1);
    proxy.close();
  }, 120_000);
});
