import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeDemo, prepareDemo } from '../src/cli/demo-seed.js';
import { runTogether } from '../src/cli/procfile.js';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let dir: string;

beforeAll(async () => {
  env = await createTestEnv();
  dir = await mkdtemp(path.join(tmpdir(), 'approval-gate-first-run-'));
});
afterAll(async () => {
  await env.close();
  await rm(dir, { recursive: true, force: true });
});

const demoFile = () => path.join(dir, `${randomUUID()}.json`);

describe('the demo organization of npm run dev', () => {
  it('is made once, then reused across restarts with the same key, and says so', async () => {
    const file = demoFile();
    const first = await prepareDemo(env.services, file);
    expect(first.origin).toBe('created');
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');

    const second = await prepareDemo(env.services, file);
    expect(second).toEqual({ demo: first.demo, origin: 'reused' });
    expect(await env.services.db.organization.count({ where: { name: 'Demo organization' } })).toBe(1);

    const banner = describeDemo(second, { file: '.approval-gate-dev.json', port: 3000 });
    expect(banner).toContain(`reused from .approval-gate-dev.json`);
    // The line that sets the guide's variables, and the environment the demo was made in.
    expect(banner).toContain(
      `export AG=http://localhost:3000 AGENT_KEY=${first.demo.agentKey.key} REVIEWER_KEY=${first.demo.reviewerKey.key} ADMIN_KEY=${first.demo.adminKey.key} ADMIN_PASSWORD=${first.demo.admin.password}`,
    );
    expect(banner).toContain(`DATABASE_URL=${env.config.DATABASE_URL}`);
    expect(first.demo.environment).toMatchObject({ NODE_ENV: 'test', DATABASE_URL: env.config.DATABASE_URL });
    // The admin key holds every scope, so every example of the guide runs with it.
    const admin = await env.services.orgs.authenticate(first.demo.adminKey.key);
    expect([...admin!.scopes].sort()).toEqual([...SCOPES].sort());
    // The printed curl works against the API and its policy sends 250 to review.
    const created = await env.http
      .post('/v1/approvals')
      .set('authorization', `Bearer ${second.demo.agentKey.key}`)
      .send({ action: 'refund', payload: { amount: 250 }, policyKey: 'refunds' })
      .expect(201);
    expect(created.body.status).toBe('pending');
    // The agent may not approve its own request; the printed reviewer key does, and the admin signs in.
    await env.http
      .post(`/v1/approvals/${created.body.id}/decision`)
      .set('authorization', `Bearer ${second.demo.agentKey.key}`)
      .send({ verdict: 'approved' })
      .expect(403);
    await env.http
      .post(`/v1/approvals/${created.body.id}/decision`)
      .set('authorization', `Bearer ${second.demo.reviewerKey.key}`)
      .send({ verdict: 'approved' })
      .expect(200);
    expect(banner).toContain(second.demo.reviewerKey.key);
    await env.http.post('/v1/session').send(second.demo.admin).expect(200);

    // Each key's creation is on the organization's audit chain, made by the seed: service keys.
    const keyEvents = await env.services.db.auditEvent.findMany({ where: { orgId: first.demo.orgId, type: 'key.created' } });
    expect(keyEvents.map((event) => [JSON.parse(event.data).keyId, JSON.parse(event.actor), JSON.parse(event.data).owner]).sort()).toEqual(
      [
        [first.demo.agentKey.id, { type: 'system', id: 'demo-seed' }, null],
        [first.demo.reviewerKey.id, { type: 'system', id: 'demo-seed' }, null],
      ].sort(),
    );
  });

  it('makes a new organization when the saved one is not in the database any more, and says that', async () => {
    const file = demoFile();
    const elsewhere = await createTestEnv();
    let stale: Awaited<ReturnType<typeof prepareDemo>>;
    try {
      stale = await prepareDemo(elsewhere.services, file);
    } finally {
      // The database the file was made against is dropped.
      await elsewhere.close();
    }
    const fresh = await prepareDemo(env.services, file);
    expect(fresh.origin).toBe('replaced');
    expect(fresh.demo.orgId).not.toBe(stale.demo.orgId);
    expect(fresh.demo.agentKey.key).not.toBe(stale.demo.agentKey.key);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(fresh.demo);
    expect(describeDemo(fresh, { file: 'demo.json', port: 3000 })).toMatch(/saved in demo\.json is not in this database any more/);
    await env.http.get('/v1/policies/refunds').set('authorization', `Bearer ${fresh.demo.agentKey.key}`).expect(200);

    expect(await prepareDemo(env.services, file)).toEqual({ demo: fresh.demo, origin: 'reused' });
  });

  it('makes a new organization when the saved key was revoked or the file is not a demo', async () => {
    const file = demoFile();
    const revoked = await prepareDemo(env.services, file);
    await env.services.orgs.revokeApiKey(revoked.demo.agentKey.id);
    const afterRevoke = await prepareDemo(env.services, file);
    expect(afterRevoke.origin).toBe('replaced');
    expect(afterRevoke.demo.orgId).not.toBe(revoked.demo.orgId);

    await writeFile(file, '{"orgId": "half a file');
    expect((await prepareDemo(env.services, file)).origin).toBe('replaced');
  });

  it('gives a demo saved before the admin key existed one, keeping its organization and keys', async () => {
    const file = demoFile();
    const { demo } = await prepareDemo(env.services, file);
    const { adminKey: _dropped, ...older } = demo;
    await writeFile(file, JSON.stringify(older));
    const again = await prepareDemo(env.services, file);
    expect(again.origin).toBe('reused');
    expect(again.demo).toMatchObject({ orgId: demo.orgId, agentKey: demo.agentKey, reviewerKey: demo.reviewerKey });
    expect(again.demo.adminKey.key).not.toBe(demo.adminKey.key);
    expect(JSON.parse(await readFile(file, 'utf8')).adminKey).toEqual(again.demo.adminKey);
    await env.http.get('/v1/audit').set('authorization', `Bearer ${again.demo.adminKey.key}`).expect(200);
  });

  it('puts the demo policy back when it was deleted, keeping the organization', async () => {
    const file = demoFile();
    const { demo } = await prepareDemo(env.services, file);
    await env.services.db.policy.deleteMany({ where: { orgId: demo.orgId, key: 'refunds' } });
    expect(await prepareDemo(env.services, file)).toEqual({ demo, origin: 'reused' });
    const policy = await env.http.get('/v1/policies/refunds').set('authorization', `Bearer ${demo.agentKey.key}`).expect(200);
    expect(policy.body.rules).toEqual([{ when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' }]);
  });
});

/** Runs `work` while a listener holds a port, and returns its outcome with that port. */
async function withTakenPort<T extends object>(work: (port: number) => Promise<T>): Promise<T & { port: number }> {
  const holder: Server = createServer();
  holder.listen(0);
  await once(holder, 'listening');
  const { port } = holder.address() as AddressInfo;
  try {
    return { ...(await work(port)), port };
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
}

function runProcess(args: string[], extraEnv: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', ...args],
      { env: { ...process.env, ...extraEnv }, timeout: 90_000 },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
    );
  });
}

describe('a taken port', () => {
  it('stops the web process with one log line and exit code 1, no stack trace', async () => {
    const result = await withTakenPort((port) =>
      runProcess(['src/server.ts'], {
        NODE_ENV: 'test',
        PORT: String(port),
        DATABASE_URL: env.config.DATABASE_URL,
        REDIS_PREFIX: env.config.REDIS_PREFIX,
      }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 60,
      name: 'web',
      msg: `port ${result.port} is in use; set PORT=<another port> or stop the other process`,
    });
  });

  it('is one pretty line in a development terminal, and JSON in production even on a terminal', async () => {
    // util-linux `script` gives the process a terminal as its stdout, as `npm run dev` in a shell does.
    const onTerminal = (nodeEnv: string) =>
      withTakenPort(
        (port) =>
          new Promise<{ code: number | null; output: string }>((resolve) => {
            execFile(
              'script',
              ['-qec', `${process.execPath} --import tsx src/server.ts`, '/dev/null'],
              {
                env: {
                  ...process.env,
                  NODE_ENV: nodeEnv,
                  PORT: String(port),
                  DATABASE_URL: env.config.DATABASE_URL,
                  REDIS_PREFIX: env.config.REDIS_PREFIX,
                },
                timeout: 90_000,
              },
              (error, stdout) => resolve({ code: error ? (error.code as number) : 0, output: stdout.replace(/\x1b\[[0-9;]*m/g, '') }),
            );
          }),
      );
    const development = await onTerminal('development');
    expect(development.code).toBe(1);
    expect(development.output.trim()).toMatch(
      new RegExp(`^\\[[0-9:.]+\\] FATAL \\(web\\): port ${development.port} is in use; set PORT=<another port> or stop the other process$`),
    );
    const production = await onTerminal('production');
    expect(production.code).toBe(1);
    expect(JSON.parse(production.output.trim())).toMatchObject({
      level: 60,
      msg: expect.stringContaining(`port ${production.port} is in use`),
    });
  }, 240_000);

  it('ends npm run dev with that one line and exit code 1 before anything starts', async () => {
    const result = await withTakenPort((port) => runProcess(['src/dev.ts'], { PORT: String(port), DATABASE_URL: env.config.DATABASE_URL }));
    expect(result).toEqual({
      port: result.port,
      code: 1,
      stdout: '',
      stderr: `port ${result.port} is in use; set PORT=<another port> or stop the other process\n`,
    });
  });
});

describe('the processes npm run dev runs together', () => {
  it('stops the others when one exits, and ends with its exit code', async () => {
    const marker = path.join(dir, 'stopped-by');
    const reported: string[] = [];
    const code = await runTogether(
      new Map([
        [
          'worker',
          `node -e "process.on('SIGTERM', () => { require('fs').writeFileSync('${marker}', 'SIGTERM'); process.exit(0); }); setInterval(() => {}, 1000)"`,
        ],
        ['web', `node -e "setTimeout(() => process.exit(3), 300)"`],
      ]),
      (line) => reported.push(line),
    );
    expect(code).toBe(3);
    expect(reported).toEqual(['web exited (3); stopping the others']);
    expect(await readFile(marker, 'utf8')).toBe('SIGTERM');
  });
});
