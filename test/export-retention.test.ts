import { mkdtemp, open, readlink, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

async function startExport(org: TestOrg): Promise<string> {
  return (await org.request('post', '/v1/audit/exports').send({}).expect(202)).body.id;
}

async function statusOf(org: TestOrg, id: string): Promise<string> {
  return (await org.request('get', `/v1/audit/exports/${id}`).expect(200)).body.status;
}

async function setExport(env: TestEnv, id: string, status: string, createdHoursAgo: number): Promise<void> {
  await env.services.sql.query(null, `UPDATE audit_exports SET status = $2, created_at = now() - $3 * interval '1 hour' WHERE id = $1`, [
    id,
    status,
    createdHoursAgo,
  ]);
}

describe('exports that never finish', () => {
  let env: TestEnv;
  let org: TestOrg;

  beforeAll(async () => {
    // No worker takes the exports: they stay queued, as when their job was lost for good.
    env = await createTestEnv();
    org = await env.createOrg();
    await appendSyntheticAuditEvents(env.services.sql, org.orgId, 10);
  });
  afterAll(() => env?.close());

  it('are expired once older than the retention, and a late run or failure does not bring them back', async () => {
    const retention = env.config.EXPORT_RETENTION_HOURS;
    const [queued, running, recent] = [await startExport(org), await startExport(org), await startExport(org)];
    await setExport(env, queued, 'queued', retention + 1);
    await setExport(env, running, 'running', retention + 1);
    await setExport(env, recent, 'running', retention - 1);
    await env.services.sql.query(null, `INSERT INTO audit_export_chunks (export_id, byte_offset, bytes) VALUES ($1, 0, 'x')`, [running]);

    expect(await env.services.audit.expireExports(500)).toBe(2);
    expect(await statusOf(org, queued)).toBe('expired');
    expect(await statusOf(org, running)).toBe('expired');
    expect(await statusOf(org, recent)).toBe('running');
    const [{ chunks }] = (await env.services.sql.query<{ chunks: number }>(
      null,
      'SELECT count(*)::int AS chunks FROM audit_export_chunks WHERE export_id = $1',
      [running],
    )) as [{ chunks: number }];
    expect(chunks).toBe(0);
    expect((await org.request('get', `/v1/audit/exports/${running}/download`)).status).toBe(410);

    // Its job, run at last, finds nothing to do; its last failed attempt leaves it expired.
    expect(await env.services.audit.runExport(org.orgId, queued)).toBeNull();
    await env.services.audit.failExport(org.orgId, running);
    expect(await statusOf(org, queued)).toBe('expired');
    expect(await statusOf(org, running)).toBe('expired');

    // The one still within the retention goes on and completes.
    expect(await env.services.audit.runExport(org.orgId, recent)).toMatchObject({ rowCount: 10 });
    expect(await statusOf(org, recent)).toBe('completed');
  });
});

describe('finished files in EXPORT_DIR', () => {
  let env: TestEnv;
  let org: TestOrg;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ag-export-sync-'));
    env = await createTestEnv({ EXPORT_DIR: dir });
    org = await env.createOrg();
    await appendSyntheticAuditEvents(env.services.sql, org.orgId, 2_000);
  });
  afterAll(async () => {
    await env?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('are fsynced before their rename, and their directory after it, before the export is completed', async () => {
    // What each fsync of this process reached, by the path of its descriptor.
    const probe = await open(path.join(dir, 'probe'), 'w');
    const fileHandle = Object.getPrototypeOf(probe) as { sync(): Promise<void>; fd: number };
    await probe.close();
    await rm(path.join(dir, 'probe'));
    const synced: string[] = [];
    const realSync = fileHandle.sync;
    const spy = vi.spyOn(fileHandle, 'sync').mockImplementation(async function (this: { fd: number }) {
      synced.push(await readlink(`/proc/self/fd/${this.fd}`));
      return realSync.call(this);
    });
    const worker = await startWorkerRuntime(env.services, ['audit-export']);
    try {
      const id = await startExport(org);
      await eventually(async () => (await statusOf(org, id)) === 'completed', 30_000);
      expect(await readdir(dir)).toEqual([`${id}.csv`]);
      const real = await import('node:fs/promises').then((fs) => fs.realpath(dir));
      expect(synced).toEqual([path.join(real, `${id}.csv.partial`), real]);
    } finally {
      spy.mockRestore();
      await worker.stop();
    }
  });
});
