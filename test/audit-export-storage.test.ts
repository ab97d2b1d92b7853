import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { maintenanceJob } from '../src/jobs/maintenance.js';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { withTimeout } from '../src/lib/time.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { spawnWorker } from './support/worker-process.js';

// About 90 MB of CSV: long enough for a worker process to be killed in the middle of it.
const EVENTS = 150_000;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

interface ExportStatus {
  id: string;
  status: string;
  rowCount: number;
  downloadPath: string | null;
}

async function startExport(org: TestOrg): Promise<string> {
  return (await org.request('post', '/v1/audit/exports').send({}).expect(202)).body.id;
}

async function waitForExport(org: TestOrg, id: string, timeoutMs = 60_000): Promise<ExportStatus> {
  return eventually(async () => {
    const { body } = await org.request('get', `/v1/audit/exports/${id}`).expect(200);
    return body.status === 'completed' || body.status === 'failed' ? (body as ExportStatus) : null;
  }, timeoutMs);
}

/** Downloads through `baseUrl` (any app instance) and returns the SHA-256 of the bytes and their length. */
async function download(baseUrl: string, org: TestOrg, id: string): Promise<{ sha256: string; bytes: number; contentLength: number }> {
  const response = await fetch(`${baseUrl}/v1/audit/exports/${id}/download`, { headers: { authorization: `Bearer ${org.key}` } });
  expect(response.status).toBe(200);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { sha256: hash.digest('hex'), bytes, contentLength: Number(response.headers.get('content-length')) };
}

async function progressOf(env: TestEnv, id: string) {
  const [row] = await env.services.sql.query<{ status: string; written_bytes: string; row_count: string; chunks: string }>(
    null,
    `SELECT status, written_bytes, row_count, (SELECT count(*) FROM audit_export_chunks WHERE export_id = $1) AS chunks
     FROM audit_exports WHERE id = $1`,
    [id],
  );
  return { status: row!.status, writtenBytes: Number(row!.written_bytes), rowCount: Number(row!.row_count), chunks: Number(row!.chunks) };
}

/** The chunks' offsets with the transaction that wrote each: a chunk written again would show another one. */
async function chunkWriters(env: TestEnv, id: string): Promise<string[]> {
  const rows = await env.services.sql.query<{ byte_offset: string; xmin: string }>(
    null,
    'SELECT byte_offset, xmin::text AS xmin FROM audit_export_chunks WHERE export_id = $1 ORDER BY byte_offset',
    [id],
  );
  return rows.map((row) => `${row.byte_offset}@${row.xmin}`);
}

async function backdate(env: TestEnv, id: string, hours: number): Promise<void> {
  await env.services.sql.query(null, `UPDATE audit_exports SET completed_at = now() - $2 * interval '1 hour' WHERE id = $1`, [id, hours]);
}

async function runMaintenance(env: TestEnv): Promise<void> {
  await env.services.jobs.add(maintenanceJob, { task: 'expire-audit-exports' as const });
}

describe('exports stored in PostgreSQL (no EXPORT_DIR)', () => {
  let env: TestEnv;
  let org: TestOrg;

  beforeAll(async () => {
    env = await createTestEnv();
    org = await env.createOrg();
    await appendSyntheticAuditEvents(env.services.sql, org.orgId, EVENTS);
  }, 120_000);

  afterAll(() => env?.close());

  it('is written by a worker process and downloaded through another app instance', async () => {
    expect(env.config.EXPORT_DIR).toBeUndefined();
    await spawnWorker(env, cleanups, ['audit-export']);
    const peer = await env.createPeer();

    const id = await startExport(org);
    const done = await waitForExport(org, id);
    expect(done).toMatchObject({ status: 'completed', rowCount: EVENTS });
    const progress = await progressOf(env, id);
    // Pieces of about 1 MiB of whole lines.
    expect(progress.chunks).toBeGreaterThan(progress.writtenBytes / (1.1 * 1024 * 1024));
    expect(progress.chunks).toBeLessThan(progress.writtenBytes / (1024 * 1024) + 1);

    const fromPeer = await download(peer.baseUrl, org, id);
    const fromFirst = await download(env.baseUrl, org, id);
    expect(fromPeer).toEqual(fromFirst);
    expect(fromPeer.bytes).toBe(progress.writtenBytes);
    expect(fromPeer.contentLength).toBe(progress.writtenBytes);

    // The same rows as the paged CSV, where they overlap: the first page, header included.
    const page = await org.request('get', '/v1/audit').query({ format: 'csv', limit: 1000 }).expect(200);
    const head = await fetch(`${peer.baseUrl}/v1/audit/exports/${id}/download`, { headers: { authorization: `Bearer ${org.key}` } });
    const reader = (head.body as ReadableStream<Uint8Array>).getReader();
    const start: Uint8Array[] = [];
    for (let length = 0; length < Buffer.byteLength(page.text);) {
      const { value } = await reader.read();
      start.push(value!);
      length += value!.length;
    }
    await reader.cancel();
    expect(Buffer.concat(start).toString('utf8').startsWith(page.text)).toBe(true);
  }, 120_000);

  it('goes on after a SIGKILL from the last saved chunk, to a file byte-identical to an uninterrupted export', async () => {
    const first = await spawnWorker(env, cleanups, ['audit-export']);
    const id = await startExport(org);
    const cut = await eventually(async () => {
      const progress = await progressOf(env, id);
      return progress.status === 'running' && progress.chunks >= 3 ? progress : null;
    }, 60_000);
    first.kill('SIGKILL');
    await once(first, 'exit');
    const atKill = await progressOf(env, id);
    expect(atKill.status).toBe('running');
    expect(atKill.rowCount).toBeLessThan(EVENTS);
    expect(atKill.writtenBytes).toBeGreaterThanOrEqual(cut.writtenBytes);
    const keptChunks = await chunkWriters(env, id);

    // The job's lock lapses (1 s here) and another worker takes it over.
    await spawnWorker(env, cleanups, ['audit-export']);
    const resumed = await waitForExport(org, id);
    expect(resumed).toMatchObject({ status: 'completed', rowCount: EVENTS });
    // The chunks saved before the kill were kept as they were, not written again.
    expect((await chunkWriters(env, id)).slice(0, keptChunks.length)).toEqual(keptChunks);

    const uninterrupted = await waitForExport(org, await startExport(org));
    const [resumedFile, wholeFile] = await Promise.all([download(env.baseUrl, org, id), download(env.baseUrl, org, uninterrupted.id)]);
    expect(resumedFile).toEqual(wholeFile);
  }, 180_000);

  it('stops at a chunk on SIGTERM and goes on from there in the next worker', async () => {
    const first = await spawnWorker(env, cleanups, ['audit-export']);
    const id = await startExport(org);
    await eventually(async () => (await progressOf(env, id)).chunks >= 3, 60_000);
    const stopping = Date.now();
    first.kill('SIGTERM');
    const [code] = (await once(first, 'exit')) as [number];
    expect(code).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(10_000);
    const atStop = await progressOf(env, id);
    expect(atStop).toMatchObject({ status: 'running' });
    expect(atStop.rowCount).toBeLessThan(EVENTS);
    const keptChunks = await chunkWriters(env, id);

    await spawnWorker(env, cleanups, ['audit-export']);
    expect(await waitForExport(org, id)).toMatchObject({ status: 'completed', rowCount: EVENTS });
    expect((await chunkWriters(env, id)).slice(0, keptChunks.length)).toEqual(keptChunks);
    const uninterrupted = await waitForExport(org, await startExport(org));
    expect(await download(env.baseUrl, org, id)).toEqual(await download(env.baseUrl, org, uninterrupted.id));
  }, 180_000);

  it('expires exports past EXPORT_RETENTION_HOURS: 410, and the maintenance queue frees their chunks', async () => {
    const small = await env.createOrg();
    await appendSyntheticAuditEvents(env.services.sql, small.orgId, 10);
    const worker = await startWorkerRuntime(env.services, ['audit-export', 'maintenance']);
    cleanups.push(() => worker.stop());
    const [old, recent] = [await startExport(small), await startExport(small)];
    await waitForExport(small, old);
    await waitForExport(small, recent);
    await backdate(env, old, env.config.EXPORT_RETENTION_HOURS + 1);
    await backdate(env, recent, env.config.EXPORT_RETENTION_HOURS - 1);

    // Past its time, the download is gone at once, before the sweep has freed anything.
    const gone = await small.request('get', `/v1/audit/exports/${old}/download`);
    expect(gone.status).toBe(410);
    expect(gone.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(gone.body).toMatchObject({ status: 410, code: 'gone' });
    expect((await progressOf(env, old)).chunks).toBe(1);

    await runMaintenance(env);
    await eventually(async () => (await progressOf(env, old)).status === 'expired');
    expect((await progressOf(env, old)).chunks).toBe(0);
    const status = await small.request('get', `/v1/audit/exports/${old}`).expect(200);
    expect(status.body).toMatchObject({ status: 'expired', downloadPath: null });
    expect((await small.request('get', `/v1/audit/exports/${old}/download`)).status).toBe(410);

    expect(await progressOf(env, recent)).toMatchObject({ status: 'completed', chunks: 1 });
    await small.request('get', `/v1/audit/exports/${recent}/download`).expect(200);
  }, 120_000);
});

describe('exports in EXPORT_DIR', () => {
  let env: TestEnv;
  let org: TestOrg;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ag-export-dir-'));
    env = await createTestEnv({ EXPORT_DIR: dir });
    org = await env.createOrg();
    await appendSyntheticAuditEvents(env.services.sql, org.orgId, EVENTS);
  }, 120_000);

  afterAll(async () => {
    await env?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes files there, goes on after a SIGKILL to the same bytes, and removes expired files', async () => {
    const first = await spawnWorker(env, cleanups, ['audit-export', 'maintenance'], { EXPORT_DIR: dir });
    const id = await startExport(org);
    await eventually(async () => (await progressOf(env, id)).writtenBytes >= 3 * 1024 * 1024, 60_000);
    first.kill('SIGKILL');
    await once(first, 'exit');
    expect((await progressOf(env, id)).rowCount).toBeLessThan(EVENTS);
    expect(await readdir(dir)).toEqual([`${id}.csv.partial`]);

    await spawnWorker(env, cleanups, ['audit-export', 'maintenance'], { EXPORT_DIR: dir });
    expect(await waitForExport(org, id)).toMatchObject({ status: 'completed', rowCount: EVENTS });
    const uninterrupted = (await waitForExport(org, await startExport(org))).id;
    expect((await readdir(dir)).sort()).toEqual([`${id}.csv`, `${uninterrupted}.csv`].sort());
    expect((await progressOf(env, id)).chunks).toBe(0);
    const peer = await env.createPeer();
    expect(await download(peer.baseUrl, org, id)).toEqual(await download(env.baseUrl, org, uninterrupted));

    await backdate(env, id, env.config.EXPORT_RETENTION_HOURS + 1);
    expect((await org.request('get', `/v1/audit/exports/${id}/download`)).status).toBe(410);
    await runMaintenance(env);
    // The file is removed just after the statement that marks the export expired.
    await eventually(async () => (await readdir(dir)).length === 1);
    expect(await readdir(dir)).toEqual([`${uninterrupted}.csv`]);
    expect((await progressOf(env, id)).status).toBe('expired');
  }, 180_000);
});
