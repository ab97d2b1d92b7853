import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/cli.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

const run = promisify(execFile);
let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

const cli = (...args: string[]) => runCli(args, env.services, { publicUrl: env.config.PUBLIC_URL }) as Promise<Record<string, string>>;

describe('bootstrap CLI', () => {
  it('creates an organization and a key that works against the API, then revokes it', async () => {
    const { orgId } = await cli(
      'org:create',
      '--name',
      'Acme',
      '--plan',
      'pro',
      '--admin-email',
      'a@acme.test',
      '--admin-email',
      'b@acme.test',
    );
    const org = await env.services.db.organization.findUniqueOrThrow({ where: { id: orgId! } });
    expect(org).toMatchObject({ name: 'Acme', plan: 'pro', adminEmails: ['a@acme.test', 'b@acme.test'] });

    const key = await cli('key:create', '--org', orgId!, '--scopes', 'policies:read,approvals:read', '--name', 'ci');
    expect(key.key).toMatch(/^agk_[A-Za-z0-9_-]{43}$/);
    // Its creation is audited, by the CLI: every key's maker is on record (docs/members-and-channels.md#principals).
    const [created] = await env.services.db.auditEvent.findMany({ where: { orgId: orgId!, type: 'key.created' } });
    expect(JSON.parse(created!.actor)).toEqual({ type: 'system', id: 'cli' });
    expect(JSON.parse(created!.data)).toMatchObject({ keyId: key.id, scopes: ['policies:read', 'approvals:read'], owner: null });
    expect(await env.services.db.apiKey.findUniqueOrThrow({ where: { id: key.id! } })).toMatchObject({
      ownerType: null,
      ownerUnknown: false,
    });
    await env.http.get('/v1/policies').set('authorization', `Bearer ${key.key}`).expect(200);
    await env.http.post('/v1/approvals').set('authorization', `Bearer ${key.key}`).send({}).expect(403);

    const stored = await env.services.db.apiKey.findUniqueOrThrow({ where: { id: key.id! } });
    expect(Buffer.from(stored.keyHash).toString('utf8')).not.toContain(key.key);
    expect(JSON.stringify(stored)).not.toContain(key.key!.slice(4));

    expect(await cli('key:revoke', '--id', key.id!)).toMatchObject({ id: key.id, revokedAt: expect.any(String) });
    await env.http.get('/v1/policies').set('authorization', `Bearer ${key.key}`).expect(401);
  });

  it('changes an organization plan', async () => {
    const { orgId } = await cli('org:create', '--name', 'Small', '--plan', 'free');
    expect(await cli('org:plan', '--org', orgId!, '--plan', 'enterprise')).toEqual({ orgId, plan: 'enterprise' });
  });

  it.each([
    [['nope'], /Unknown command 'nope'/],
    [[], /Usage/],
    [['org:create', '--plan', 'pro'], /--name/],
    [['org:create', '--name', 'x', '--plan', 'gold'], /--plan/],
    [['org:create', '--name', 'x', '--plan', 'pro', '--admin-email', 'not-an-email'], /admin-email/],
    [['org:create', '--name', 'x', '--plan', 'pro', '--colour', 'red'], /colour/],
    [['key:create', '--org', '00000000-0000-4000-8000-000000000000', '--scopes', 'approvals:read'], /No organization/],
    [['key:create', '--org', 'x', '--scopes', 'approvals:fly'], /--scopes/],
    [['key:revoke', '--id', 'not-a-key'], /No API key/],
    [['org:plan', '--org', '00000000-0000-4000-8000-000000000000', '--plan', 'pro'], /No organization/],
  ])('rejects %j with a clear message', async (args, message) => {
    await expect(runCli(args, env.services, { publicUrl: env.config.PUBLIC_URL })).rejects.toThrow(message);
  });

  it('prints JSON on stdout and exits non-zero with a message on stderr, as a process', async () => {
    const options = { env: { ...process.env, DATABASE_URL: env.config.DATABASE_URL }, cwd: process.cwd() };
    const ok = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/index.ts', 'org:create', '--name', 'Proc', '--plan', 'pro'],
      options,
    );
    expect(JSON.parse(ok.stdout)).toEqual({ orgId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const failed = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/index.ts', 'org:plan', '--org', 'x', '--plan', 'pro'],
      options,
    ).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect((failed as { stderr: string }).stderr).toMatch(/No organization with id 'x'/);
  });

  it("runs the common commands without loading Prisma's query compiler, which a key:attribute does load", async () => {
    // Reports every module the process resolves whose path names Prisma's query compiler.
    const reportCompiler = `data:text/javascript,${encodeURIComponent(
      `import { registerHooks } from 'node:module';
       registerHooks({ resolve(specifier, context, next) {
         const resolved = next(specifier, context);
         if (resolved.url.includes('query_compiler')) process.stderr.write('loaded ' + resolved.url + '\\n');
         return resolved;
       } });`,
    )}`;
    const command = async (...args: string[]) => {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', '--import', reportCompiler, 'src/cli/index.ts', ...args], {
        env: { ...process.env, DATABASE_URL: env.config.DATABASE_URL },
      });
      return { output: JSON.parse(stdout) as Record<string, string>, compilerLoaded: stderr.includes('loaded ') };
    };
    const created = await command('org:create', '--name', 'Lean', '--plan', 'pro');
    const orgId = created.output.orgId!;
    const key = await command('key:create', '--org', orgId, '--scopes', 'approvals:read');
    const member = await command('member:create', '--org', orgId, '--email', 'lean@acme.test', '--role', 'admin');
    const plan = await command('org:plan', '--org', orgId, '--plan', 'free');
    const attributed = await command('key:create', '--org', orgId, '--scopes', 'approvals:read');
    await env.services.db.apiKey.update({ where: { id: attributed.output.id! }, data: { ownerUnknown: true } });
    const attribution = await command('key:attribute', '--org', orgId, '--id', attributed.output.id!, '--service');
    const revoked = await command('key:revoke', '--id', key.output.id!);
    expect(revoked.output).toMatchObject({ id: key.output.id, revokedAt: expect.any(String) });
    expect(member.output.inviteUrl).toMatch(/\/console\/invite\//);
    expect(
      Object.fromEntries(Object.entries({ created, key, member, plan, revoked }).map(([name, result]) => [name, result.compilerLoaded])),
    ).toEqual({ created: false, key: false, member: false, plan: false, revoked: false });
    expect(attribution.compilerLoaded).toBe(true);
  });

  it('names a DATABASE_URL that is no URL in one line, without a stack trace', async () => {
    const failed = await run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'org:create', '--name', 'x', '--plan', 'pro'], {
      env: { ...process.env, DATABASE_URL: 'approval_gate on localhost' },
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect((failed as { stderr: string }).stderr.trimEnd().split('\n')).toEqual([
      'Invalid environment configuration: DATABASE_URL must be a URL',
    ]);
  });

  it.each([
    [
      'a database that does not exist',
      (url: URL) => (url.pathname = '/approval_gate_nowhere'),
      /database "approval_gate_nowhere" does not exist/,
    ],
    ['a port nothing listens on', (url: URL) => (url.port = '1'), /ECONNREFUSED/],
    [
      'a role that does not exist, its password hidden',
      (url: URL) => ((url.username = 'nobody'), (url.password = 'hunter2')),
      /nobody:\*\*\*@.*role "nobody" does not exist/,
    ],
  ])('names %s in one line, without a stack trace', async (_what, spoil, reason) => {
    const url = new URL(env.config.DATABASE_URL);
    spoil(url);
    const failed = await run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'org:create', '--name', 'x', '--plan', 'pro'], {
      env: { ...process.env, DATABASE_URL: url.toString() },
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    const { stderr } = failed as { stderr: string };
    expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^Cannot use the database postgresql:\/\//)]);
    expect(stderr).toMatch(reason);
    expect(stderr).not.toContain('hunter2');
  });
});
