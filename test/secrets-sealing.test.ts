import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { resealColumns } from '../src/data/sealed-columns.js';
import { SecretBox } from '../src/lib/secret-box.js';
import { webhookSecretColumns, WebhookSecrets } from '../src/modules/webhooks/webhook-secrets.js';
import { verifyWebhook } from '../src/modules/webhooks/verify-webhook.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { startSlackApi, type SlackApi } from './support/slack-api.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type ReceivedDelivery, type Receiver } from './support/webhook-receiver.js';

const run = promisify(execFile);
const newKey = () => randomBytes(32).toString('base64');
/** The digest a sealed value names its key by (`v1.<key id>.…`). */
const keyIdOf = (key: string) => SecretBox.fromBase64(key).seal('x', 'x').split('.')[1]!;
const BOT_TOKEN = 'xoxb-1234-5678-sealedBotToken';
const SIGNING_SECRET = 'f00dfeedc0ffee00f00dfeedc0ffee00';

let receiver: Receiver;
let slack: SlackApi;
const envs: TestEnv[] = [];
const workers: WorkerRuntime[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  slack = await startSlackApi();
});
afterAll(async () => {
  for (const worker of workers) await worker.stop();
  // The last env made is the first closed: later ones share the database of the first.
  for (const env of envs.reverse()) await env.close();
  await receiver.close();
  await slack.close();
});

async function testEnv(overrides: Record<string, string>): Promise<TestEnv> {
  const env = await createTestEnv({
    OUTBOX_POLL_INTERVAL_MS: '100',
    WEBHOOK_BACKOFF_SCALE: '0.001',
    SLACK_API_URL: slack.url,
    ...overrides,
  });
  envs.push(env);
  return env;
}

/** Another web and worker process over the same database and Redis prefix as `env`, with other keys. */
function sameDatabase(env: TestEnv, keys: { SECRETS_ENCRYPTION_KEY: string; SECRETS_ENCRYPTION_KEYS_OLD?: string }): Promise<TestEnv> {
  return testEnv({
    DATABASE_URL: env.config.DATABASE_URL,
    REDIS_PREFIX: env.config.REDIS_PREFIX,
    SECRETS_ENCRYPTION_KEYS_OLD: '',
    ...keys,
  });
}

async function deliveringWorker(env: TestEnv): Promise<WorkerRuntime> {
  const worker = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery']);
  workers.push(worker);
  return worker;
}

/** Runs the CLI as a process, as an operator would, with these keys. */
function reseal(env: TestEnv, keys: Record<string, string>) {
  return run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'secrets:reseal'], {
    env: { ...process.env, DATABASE_URL: env.config.DATABASE_URL, SECRETS_ENCRYPTION_KEYS_OLD: '', ...keys },
    cwd: process.cwd(),
  });
}

/** An approval its policy approves at once (an `approval.approved` event), and the deliveries of it to each path. */
async function approvedDeliveries(org: TestOrg, paths: string[]): Promise<ReceivedDelivery[]> {
  const { id } = (await org.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, policyKey: 'auto' }).expect(200)).body;
  await receiver.waitFor((received) =>
    paths.every((path) => received.some((delivery) => delivery.path === path && delivery.body.data.approvalId === id)),
  );
  return paths.map((path) => receiver.at(path).find((delivery) => delivery.body.data.approvalId === id)!);
}

const verifies = (delivery: ReceivedDelivery, secret: string) =>
  verifyWebhook({ rawBody: delivery.rawBody, headers: delivery.headers, secret }).id === delivery.body.id;

async function storedSecrets(env: TestEnv, orgId: string) {
  const endpoints = await env.services.db.webhookEndpoint.findMany({ where: { orgId } });
  const slackRow = await env.services.db.slackIntegration.findUnique({ where: { orgId } });
  return [
    ...endpoints.flatMap((endpoint) => [endpoint.secret, ...(endpoint.previousSecret ? [endpoint.previousSecret] : [])]),
    ...(slackRow ? [slackRow.botToken, slackRow.signingSecret] : []),
  ];
}

describe('SECRETS_ENCRYPTION_KEY and SECRETS_ENCRYPTION_KEYS_OLD', () => {
  it('are refused when malformed, each message naming its variable', () => {
    for (const bad of [
      'not base64!',
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('base64'),
      `${newKey().slice(0, -4)}@@@=`,
    ]) {
      expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: bad })).toThrow(/SECRETS_ENCRYPTION_KEY must be 32 random bytes, base64-encoded/);
    }
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: newKey(), SECRETS_ENCRYPTION_KEYS_OLD: `${newKey()},short` })).toThrow(
      /SECRETS_ENCRYPTION_KEYS_OLD must be a comma-separated list of keys of 32 random bytes, base64-encoded/,
    );
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEYS_OLD: newKey() })).toThrow(/SECRETS_ENCRYPTION_KEYS_OLD needs SECRETS_ENCRYPTION_KEY/);

    const [current, older, oldest] = [newKey(), newKey(), newKey()];
    const config = loadConfig({ SECRETS_ENCRYPTION_KEY: current, SECRETS_ENCRYPTION_KEYS_OLD: ` ${older}, ${oldest},` });
    expect(config.SECRETS_ENCRYPTION_KEYS_OLD).toEqual([older, oldest]);
    expect(loadConfig({}).SECRETS_ENCRYPTION_KEYS_OLD).toEqual([]);
  });

  it('stop a process at start with that message', async () => {
    const failed = await run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'secrets:reseal'], {
      env: { ...process.env, SECRETS_ENCRYPTION_KEY: 'too-short', SECRETS_ENCRYPTION_KEYS_OLD: '' },
      cwd: process.cwd(),
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect((failed as { stderr: string }).stderr).toContain('SECRETS_ENCRYPTION_KEY must be 32 random bytes, base64-encoded');
  });
});

describe('webhook signing secrets at rest', () => {
  it('are sealed when the key is set, current and previous alike, and deliveries are still signed with them', async () => {
    const key = newKey();
    const env = await testEnv({ SECRETS_ENCRYPTION_KEY: key });
    const org = await env.createOrg();
    await org.request('put', '/v1/policies/auto').send({ defaultOutcome: 'allow' }).expect(200);
    const created = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/sealed'), events: ['approval.approved'] })
        .expect(201)
    ).body;
    const rotated = (await org.request('post', `/v1/webhooks/${created.id}/rotate-secret`).expect(200)).body;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);

    const row = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id: created.id } });
    for (const secret of [created.secret, rotated.secret]) {
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(JSON.stringify(row)).not.toContain(secret.slice('whsec_'.length, 30));
    }
    expect(row.secret).toMatch(new RegExp(`^v1\\.${keyIdOf(key)}\\.`));
    expect(row.previousSecret).toMatch(new RegExp(`^v1\\.${keyIdOf(key)}\\.`));
    // A sealed value copied to another endpoint does not open there.
    const other = await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/copied'), events: ['approval.approved'] })
      .expect(201);
    await env.services.db.webhookEndpoint.update({ where: { id: other.body.id }, data: { secret: row.secret } });

    await deliveringWorker(env);
    const [delivery] = await approvedDeliveries(org, ['/sealed']);
    expect(verifies(delivery!, rotated.secret)).toBe(true);
    expect(verifies(delivery!, created.secret)).toBe(true);
    expect(receiver.at('/copied')).toEqual([]);
  });

  it('are kept as they are without a key, as before', async () => {
    const env = await testEnv({});
    const org = await env.createOrg();
    const created = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/plain'), events: ['approval.approved'] })
        .expect(201)
    ).body;
    const row = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.secret).toBe(created.secret);
  });

  it('reseals a table in batches, every row once, and opens each to what it was', async () => {
    const env = await testEnv({});
    const orgs = await Promise.all([env.createOrg(), env.createOrg(), env.createOrg()]);
    const rows = orgs.flatMap(({ orgId }) =>
      Array.from({ length: 85 }, (_, i) => ({
        orgId,
        url: `https://hooks.acme.test/${i}`,
        events: ['approval.approved'],
        secret: `whsec_${randomBytes(32).toString('base64')}`,
      })),
    );
    await env.services.db.webhookEndpoint.createMany({ data: rows });
    const box = SecretBox.fromBase64(newKey());
    expect(await resealColumns(env.services.db, box, webhookSecretColumns)).toEqual({ resealed: 255, current: 0 });
    expect(await resealColumns(env.services.db, box, webhookSecretColumns)).toEqual({ resealed: 0, current: 255 });
    const stored = await env.services.db.webhookEndpoint.findMany();
    const secrets = new WebhookSecrets(box);
    const opened = new Set(
      stored.map((endpoint) => secrets.fromStored({ orgId: endpoint.orgId, endpointId: endpoint.id }, endpoint.secret)),
    );
    expect(opened).toEqual(new Set(rows.map((row) => row.secret)));
  });
});

describe('rotating SECRETS_ENCRYPTION_KEY', () => {
  it('reads under the old keys, reseals everything under the new one with the CLI while the service runs, then needs only the new key', async () => {
    const [first, second] = [newKey(), newKey()];
    // Before: one endpoint sealed under the first key, one from before sealing (as stored then), Slack sealed.
    const before = await testEnv({ SECRETS_ENCRYPTION_KEY: first });
    const org = await before.createOrg();
    await org.request('put', '/v1/policies/auto').send({ defaultOutcome: 'allow' }).expect(200);
    const sealed = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/rotating-sealed'), events: ['approval.approved'] })
        .expect(201)
    ).body;
    const plain = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url('/rotating-plain'), events: ['approval.approved'] })
        .expect(201)
    ).body;
    const legacySecret = `whsec_${randomBytes(32).toString('base64')}`;
    await before.services.db.webhookEndpoint.update({ where: { id: plain.id }, data: { secret: legacySecret } });
    await org
      .request('put', '/v1/integrations/slack')
      .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: '#approvals' })
      .expect(200);
    expect(await storedSecrets(before, org.orgId)).toEqual(
      expect.arrayContaining([legacySecret, expect.stringMatching(new RegExp(`^v1\\.${keyIdOf(first)}\\.`))]),
    );

    // The new key, the first one kept for reading: deliveries still verify, the Slack token still opens.
    const during = await sameDatabase(before, { SECRETS_ENCRYPTION_KEY: second, SECRETS_ENCRYPTION_KEYS_OLD: first });
    const duringWorker = await deliveringWorker(during);
    const [fromSealed, fromPlain] = await approvedDeliveries(org, ['/rotating-sealed', '/rotating-plain']);
    expect(verifies(fromSealed!, sealed.secret)).toBe(true);
    expect(verifies(fromPlain!, legacySecret)).toBe(true);
    expect((await (await during.services.slack.connection(org.orgId))!.client()).token).toBe(BOT_TOKEN);

    // The CLI reseals while a web process (with the same keys) rotates the sealed endpoint's secret again and again.
    const rotations: string[] = [];
    const resealing = reseal(during, { SECRETS_ENCRYPTION_KEY: second, SECRETS_ENCRYPTION_KEYS_OLD: first });
    let resealed: Awaited<typeof resealing> | undefined;
    void resealing.then(
      (done) => (resealed = done),
      () => undefined,
    );
    while (!resealed || rotations.length < 2) {
      const rotated = await during.http
        .post(`/v1/webhooks/${sealed.id}/rotate-secret`)
        .set('authorization', `Bearer ${org.key}`)
        .expect(200);
      rotations.push(rotated.body.secret);
      if (rotations.length > 500) break;
    }
    await resealing;
    expect(JSON.parse(resealed!.stdout)).toMatchObject({
      webhookEndpoints: { resealed: expect.any(Number), current: expect.any(Number) },
      slackIntegrations: { resealed: 1, current: 0 },
    });
    const underSecond = new RegExp(`^v1\\.${keyIdOf(second)}\\.`);
    const stored = await storedSecrets(during, org.orgId);
    expect(stored).toHaveLength(2 + 1 + 2);
    for (const value of stored) expect(value).toMatch(underSecond);
    // Idempotent: run again, nothing is left to do.
    const again = await reseal(during, { SECRETS_ENCRYPTION_KEY: second, SECRETS_ENCRYPTION_KEYS_OLD: first });
    expect(JSON.parse(again.stdout)).toEqual({
      webhookEndpoints: { resealed: 0, current: 2 },
      slackIntegrations: { resealed: 0, current: 1 },
      teamsIntegrations: { resealed: 0, current: 0 },
    });
    await duringWorker.stop();
    workers.splice(workers.indexOf(duringWorker), 1);

    // The first key removed: everything still opens.
    const after = await sameDatabase(before, { SECRETS_ENCRYPTION_KEY: second });
    await deliveringWorker(after);
    const [nowSealed, nowPlain] = await approvedDeliveries(org, ['/rotating-sealed', '/rotating-plain']);
    expect(verifies(nowSealed!, rotations.at(-1)!)).toBe(true);
    expect(verifies(nowSealed!, rotations.at(-2)!)).toBe(true);
    expect(verifies(nowPlain!, legacySecret)).toBe(true);
    expect((await (await after.services.slack.connection(org.orgId))!.client()).token).toBe(BOT_TOKEN);
  }, 60_000);

  it('fails clearly under a key that sealed none of it: the CLI, a delivery, Slack', async () => {
    const [right, wrong] = [newKey(), newKey()];
    const env = await testEnv({ SECRETS_ENCRYPTION_KEY: right });
    const org = await env.createOrg();
    await org.request('put', '/v1/policies/auto').send({ defaultOutcome: 'allow' }).expect(200);
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/wrong-key'), events: ['approval.approved'] })
      .expect(201);
    await org
      .request('put', '/v1/integrations/slack')
      .send({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, channel: '#approvals' })
      .expect(200);
    const clearly = new RegExp(
      `sealed under key ${keyIdOf(right)}, which is neither SECRETS_ENCRYPTION_KEY \\(${keyIdOf(wrong)}\\) nor one of SECRETS_ENCRYPTION_KEYS_OLD`,
    );

    const failed = await reseal(env, { SECRETS_ENCRYPTION_KEY: wrong }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(clearly);
    expect((await storedSecrets(env, org.orgId)).every((value) => value.startsWith(`v1.${keyIdOf(right)}.`))).toBe(true);

    const wrongEnv = await sameDatabase(env, { SECRETS_ENCRYPTION_KEY: wrong });
    await expect(wrongEnv.services.slack.connection(org.orgId)).rejects.toThrow(clearly);
    await deliveringWorker(wrongEnv);
    await org.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, policyKey: 'auto' }).expect(200);
    await eventually(() => wrongEnv.logs.some((line) => clearly.test(JSON.stringify(line))));
    expect(receiver.at('/wrong-key')).toEqual([]);
  }, 30_000);
});
