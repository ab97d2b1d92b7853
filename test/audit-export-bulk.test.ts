import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const EVENTS = 200_000;
const MB = 1024 * 1024;

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ag-audit-bulk-'));
  env = await createTestEnv();
  org = await env.createOrg();
  await appendSyntheticAuditEvents(env.services.sql, org.orgId, EVENTS);
  worker = await startWorkerRuntime(env.services, ['audit-export']);
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await rm(dir, { recursive: true, force: true });
});

async function countLines(file: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let index = chunk.indexOf(10); index !== -1; index = chunk.indexOf(10, index + 1)) lines++;
  }
  return lines;
}

describe(`a chain of ${EVENTS} events`, () => {
  it('exports in constant memory, and the download verifies with the standalone script', async () => {
    // The worker runs in this process: its memory is this process's, sampled while it works.
    global.gc?.();
    const start = process.memoryUsage();
    const startRss = start.rss;
    let peakRss = startRss;
    let peakArrayBuffers = start.arrayBuffers;
    let peakHeapUsed = start.heapUsed;
    const sampler = setInterval(() => {
      const { rss, arrayBuffers, heapUsed } = process.memoryUsage();
      peakRss = Math.max(peakRss, rss);
      peakArrayBuffers = Math.max(peakArrayBuffers, arrayBuffers);
      peakHeapUsed = Math.max(peakHeapUsed, heapUsed);
    }, 10);

    const created = await org.request('post', '/v1/audit/exports').send({}).expect(202);
    let status = created.body;
    while (status.status === 'queued' || status.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 25));
      status = (await org.request('get', `/v1/audit/exports/${created.body.id}`).expect(200)).body;
    }
    clearInterval(sampler);
    const endRss = process.memoryUsage().rss;
    console.log(
      `bulk export of ${EVENTS} events: RSS start ${Math.round(startRss / MB)} MB, peak ${Math.round(peakRss / MB)} MB, end ${Math.round(endRss / MB)} MB;` +
        ` Buffers start ${Math.round(start.arrayBuffers / MB)} MB, peak ${Math.round(peakArrayBuffers / MB)} MB;` +
        ` heap used start ${Math.round(start.heapUsed / MB)} MB, peak ${Math.round(peakHeapUsed / MB)} MB`,
    );
    expect(status).toMatchObject({ status: 'completed', rowCount: EVENTS });
    // The file is over 120 MB; the worker's memory moves by a fraction of it, whatever its size.
    // Buffers are where an export's bytes pass, outside V8's heap and collected late: when pg copied
    // each 1 MiB piece into a bind message of its own they grew by +69 MB here (RSS +45 to +72 MB);
    // streamed by COPY FROM STDIN, measured +23 to +32 MB (RSS +2 to +28 MB; files alone +17 MB),
    // and later +33 to +54 MB over thirteen runs of one day (RSS +12 to +52 MB): when the collector
    // frees them varies. The bound is half the file, and under what one bind message per piece took.
    const bound = 60 * MB;
    expect(peakArrayBuffers - start.arrayBuffers).toBeLessThan(bound);
    expect(peakRss - startRss).toBeLessThan(bound);
    expect(endRss - startRss).toBeLessThan(bound);

    const file = path.join(dir, 'export.csv');
    const response = await fetch(`${env.baseUrl}${status.downloadPath}`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(response.status).toBe(200);
    await pipeline(Readable.fromWeb(response.body as ReadableStream), createWriteStream(file));
    expect(await countLines(file)).toBe(EVENTS + 1);

    const verdict = await new Promise<{ code: number; stdout: string }>((resolve) => {
      const root = fileURLToPath(new URL('..', import.meta.url));
      execFile(process.execPath, ['--import', 'tsx', 'src/cli/verify-audit-export.ts', file], { cwd: root }, (error, stdout) =>
        resolve({ code: error ? Number(error.code) : 0, stdout }),
      );
    });
    expect(verdict).toEqual({ code: 0, stdout: expect.stringMatching(new RegExp(`^intact: ${EVENTS} events, seq 1-${EVENTS}`)) });
  }, 180_000);

  it('verifies in ranges and names the first broken seq across them', async () => {
    const verify = async () => (await org.request('get', '/v1/audit').query({ verify: true, limit: 1 }).expect(200)).body.verification;
    expect(await verify()).toMatchObject({ intact: true, count: EVENTS, brokenAtSeq: null });
    const tamper = (statement: string) => env.services.db.$executeRawUnsafe(statement, org.orgId);
    // The chain is checked in two ranges, 1-100000 and 100001-200000: tamper on both sides of the seam.
    await tamper('DELETE FROM audit_events WHERE org_id = $1::uuid AND seq = 150001');
    expect(await verify()).toMatchObject({ intact: false, count: EVENTS - 1, brokenAtSeq: 150_001 });
    await tamper('DELETE FROM audit_events WHERE org_id = $1::uuid AND seq = 100001');
    expect(await verify()).toMatchObject({ intact: false, brokenAtSeq: 100_001 });
    await tamper('DELETE FROM audit_events WHERE org_id = $1::uuid AND seq = 100000');
    expect(await verify()).toMatchObject({ intact: false, brokenAtSeq: 100_000 });
    await tamper(`UPDATE audit_events SET data = replace(data, '"amount":42', '"amount":43') WHERE org_id = $1::uuid AND seq = 42`);
    expect(await verify()).toMatchObject({ intact: false, count: EVENTS - 3, brokenAtSeq: 42 });
  }, 120_000);
});
