// The console's inbox over an organization with 10,000 pending approvals: how long its first page
// takes from the API (the request the console makes, with a session cookie), and how long
// Chromium takes from navigating to /console/ to showing the rows.
//
//   npm run bench:inbox                     10,000 pending, 50 API reads and 10 page loads per case
//   BENCH_PENDING=2000 BENCH_READS=20 npm run bench:inbox
//   BENCH_CONSOLE_BEFORE=/tmp/console-main npm run bench:inbox
//                                           also a second web process serving that console build
//                                           (another tree's dist/console), page loads alternating
//                                           between the two, and the ratio of their medians
//
// Cases: a reviewer who may decide every pending request (the usual inbox), and one who may decide
// none of them (an empty inbox that must look through all 10,000 to know it is empty). The server
// runs compiled, as in production. bench:listing measures the listing itself at scale, with an API
// key; this one measures the console's way in. The last line of stdout is the figures as JSON.
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../test/support/browser.js';
import { mapConcurrent } from './lib/concurrency.js';
import { formatTable, median, percentile, round } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, HOST, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { startWebServer } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const PENDING = envInt('BENCH_PENDING', 10_000);
const READS = envInt('BENCH_READS', 50);
const PAGE_LOADS = envInt('BENCH_PAGE_LOADS', 10);
const TARGET_MS = 300;
const DATABASE = 'approval_gate_bench_inbox';
const REDIS_PREFIX = 'agbenchinbox';
const PORT = 3911;
const BASE = `http://${HOST}:${PORT}`;
const BEFORE_DIR = process.env.BENCH_CONSOLE_BEFORE;
const BEFORE_PORT = 3913;

/** A web process serving a console build to time. */
interface Build {
  label: string;
  base: string;
}
/** The console's inbox request (src/console/pages/inbox-page.tsx). */
const INBOX_PATH = '/v1/approvals?status=pending&decidable=true&include=createdByKey';

interface Case {
  name: string;
  org: BenchOrg;
  /** The session cookie of the member whose inbox it is. */
  cookie: string;
  /** Rows the first page should show. */
  expectedRows: number;
}

/** A member of the org with `role`, signed in through the invite as the console does; returns the session cookie. */
async function signedInMember(org: BenchOrg, email: string): Promise<string> {
  const invited = await expectJson(201, {
    port: PORT,
    method: 'POST',
    path: '/v1/members',
    key: org.key,
    body: { email, role: 'reviewer' },
  });
  const token = new URL(invited.inviteUrl).pathname.split('/').pop();
  const accepted = await fetch(`${BASE}/v1/invites/accept`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password: 'bench-password-1' }),
  });
  if (accepted.status !== 200) throw new Error(`invite accept: ${accepted.status} ${await accepted.text()}`);
  const cookie = accepted.headers.getSetCookie().find((header) => header.startsWith('ag_session='));
  if (!cookie) throw new Error('no session cookie');
  return cookie.split(';')[0]!;
}

async function seedPending(org: BenchOrg, policyKey: string): Promise<void> {
  const started = Date.now();
  await mapConcurrent(
    Array.from({ length: PENDING }, (_, i) => i),
    20,
    (i) =>
      expectJson(201, {
        port: PORT,
        method: 'POST',
        path: '/v1/approvals',
        key: org.key,
        body: { action: 'refund', payload: { amount: 1000 + i, order: `o-${i}` }, policyKey, agent: `agent-${i % 7}` },
      }),
  );
  log(`seeded ${PENDING} pending approvals under ${policyKey} in ${round((Date.now() - started) / 1000)} s`);
}

/** Times GET of the inbox's first page with the member's cookie, sequentially, after a warm-up. */
async function apiReads(item: Case): Promise<number[]> {
  const read = async () => {
    const started = performance.now();
    const response = await fetch(`${BASE}${INBOX_PATH}`, { headers: { cookie: item.cookie } });
    const body = (await response.json()) as { approvals: unknown[] };
    const elapsed = performance.now() - started;
    if (response.status !== 200 || body.approvals.length !== item.expectedRows)
      throw new Error(`${item.name}: ${response.status}, ${body.approvals.length} rows`);
    return elapsed;
  };
  for (let i = 0; i < 5; i++) await read();
  const times: number[] = [];
  for (let i = 0; i < READS; i++) times.push(await read());
  return times;
}

interface Loads {
  shownMs: number[];
  mainThreadMs: number[];
}

/**
 * Loads /console/ in a fresh tab of each build in turn, signed in, and reads the browser's own
 * clock (from navigation start) at the first frame that shows the inbox's rows, or its empty
 * message; and how much of that the page's main thread was busy (Chrome's TaskDuration), which a
 * loaded machine inflates less than the wall clock. Builds take turns so that the machine's drift
 * moves them alike.
 */
async function pageLoads(browser: Browser, item: Case, builds: readonly Build[]): Promise<Loads[]> {
  const [name, value] = item.cookie.split('=') as [string, string];
  const contexts = await Promise.all(
    builds.map(async (build) => {
      const context = await browser.newContext({ baseURL: build.base });
      await context.addCookies([{ name, value, url: build.base }]);
      return context;
    }),
  );
  const loads: Loads[] = builds.map(() => ({ shownMs: [], mainThreadMs: [] }));
  try {
    for (let i = 0; i < PAGE_LOADS + 1; i++) {
      for (const [index, context] of contexts.entries()) {
        const page = await context.newPage();
        const cdp = await context.newCDPSession(page);
        await cdp.send('Performance.enable');
        await page.goto('/console/', { waitUntil: 'commit' });
        const shownAt = await page.waitForFunction(
          (expected) => {
            // In the page; this file is compiled without the DOM's types.
            const { document } = globalThis as unknown as { document: { querySelectorAll(selector: string): ArrayLike<unknown> } };
            const shown =
              expected === 0
                ? document.querySelectorAll('.empty').length > 0
                : document.querySelectorAll('ol[aria-label="Pending approvals"] > li').length === expected;
            return shown && performance.now();
          },
          item.expectedRows,
          { polling: 'raf', timeout: 30_000 },
        );
        // The first load fills the browser's cache with the bundle, as a reviewer's second visit would.
        const { metrics } = await cdp.send('Performance.getMetrics');
        if (i > 0) {
          loads[index]!.shownMs.push((await shownAt.jsonValue()) as number);
          loads[index]!.mainThreadMs.push(metrics.find((metric) => metric.name === 'TaskDuration')!.value * 1000);
        }
        await page.close();
      }
    }
  } finally {
    await Promise.all(contexts.map((context) => context.close()));
  }
  return loads;
}

const summary = (times: number[]) => ({
  medianMs: round(median(times)),
  p95Ms: round(percentile(times, 95)),
  maxMs: round(Math.max(...times)),
});

runBenchmark('bench:inbox', 900_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    const deleted = await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:*`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [mine, others] = await createOrgs(dbUrl, 2);
  const api = await startWebServer({ port: PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => api.stop());
  log(`api up (pid ${api.pid}); seeding`);

  // `mine`: reviewers decide everything (the default). `others`: only a named member decides, so
  // a reviewer's inbox is empty although 10,000 requests are pending.
  await putPolicy(PORT, mine!.key, 'bench-review', { defaultOutcome: 'review' });
  await putPolicy(PORT, others!.key, 'bench-review', { reviewers: { roles: [], members: ['someone-else@bench.test'] } });
  await seedPending(mine!, 'bench-review');
  await seedPending(others!, 'bench-review');
  const cases: Case[] = [
    { name: 'reviewer, all decidable', org: mine!, cookie: await signedInMember(mine!, 'reviewer@bench.test'), expectedRows: 50 },
    { name: 'reviewer, none decidable', org: others!, cookie: await signedInMember(others!, 'reviewer@bench.test'), expectedRows: 0 },
  ];

  const builds: Build[] = [{ label: 'this tree', base: BASE }];
  if (BEFORE_DIR) {
    const before = await startWebServer({
      port: BEFORE_PORT,
      databaseUrl: dbUrl,
      redisPrefix: REDIS_PREFIX,
      env: { CONSOLE_DIR: path.resolve(BEFORE_DIR) },
    });
    cleanup(() => before.stop());
    builds.push({ label: `before (${BEFORE_DIR})`, base: `http://${HOST}:${BEFORE_PORT}` });
  }

  const browser = await launchBrowser();
  cleanup(() => browser.close());
  const results = [];
  for (const item of cases) {
    const api = summary(await apiReads(item));
    log(`${item.name}: API first page median ${api.medianMs} ms, p95 ${api.p95Ms} ms`);
    const loads = await pageLoads(browser, item, builds);
    const rendered = builds.map((build, index) => {
      const result = { build: build.label, rendered: summary(loads[index]!.shownMs), mainThread: summary(loads[index]!.mainThreadMs) };
      log(
        `${item.name}, ${build.label}: rows rendered in Chromium median ${result.rendered.medianMs} ms (main thread busy ${result.mainThread.medianMs} ms of it)`,
      );
      return result;
    });
    results.push({ case: item.name, api, builds: rendered });
  }

  console.log(`\nInbox first page, ${PENDING} pending approvals in the organization (target: under ${TARGET_MS} ms)\n`);
  console.log(
    formatTable(
      ['case', 'build', 'API median ms', 'API p95 ms', 'rendered median ms', 'rendered p95 ms', 'main thread median ms'],
      results.flatMap((result) =>
        result.builds.map((build) => [
          result.case,
          build.build,
          result.api.medianMs,
          result.api.p95Ms,
          build.rendered.medianMs,
          build.rendered.p95Ms,
          build.mainThread.medianMs,
        ]),
      ),
    ),
  );
  if (BEFORE_DIR) {
    for (const result of results) {
      const [now, before] = result.builds as [(typeof result.builds)[number], (typeof result.builds)[number]];
      console.log(
        `${result.case}: this tree / before, rendered ${round(now.rendered.medianMs / before.rendered.medianMs, 2)}×, main thread ${round(now.mainThread.medianMs / before.mainThread.medianMs, 2)}×`,
      );
    }
  }
  console.log(`\nAPI: ${READS} sequential reads of GET ${INBOX_PATH} with the session cookie, after 5 unmeasured.`);
  console.log(`Rendered: navigation start to the first frame with the rows, ${PAGE_LOADS} loads of /console/ with a warm cache;`);
  console.log(`main thread: the time the page's main thread was busy until then (parsing, running, layout, paint).`);
  console.log(
    `Load average while measuring: ${os
      .loadavg()
      .map((load) => round(load, 1))
      .join(', ')} on ${os.availableParallelism()} cores.`,
  );
  console.log(JSON.stringify({ pending: PENDING, targetMs: TARGET_MS, results }));
});
