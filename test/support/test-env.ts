import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { Express } from 'express';
import { Redis } from 'ioredis';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../src/config.js';
import { createApp, createHttpServer } from '../../src/http/app.js';
import { answerClientErrors } from '../../src/http/client-errors.js';
import { createLogger } from '../../src/lib/logger.js';
import { recordLogLines } from './log-lines.js';
import { generateApiKey, hashApiKey } from '../../src/modules/orgs/api-keys.js';
import type { Scope } from '../../src/modules/orgs/tenant.js';
import { SCOPES, type Plan } from '../../src/modules/orgs/tenant.js';
import { createServices, type Services } from '../../src/services.js';
import { afterAll, beforeAll, inject } from 'vitest';
import { databaseUrl, onServer } from './databases.js';
import { listen } from '../../src/lib/listen.js';
import { freePort, listenOnLoopback } from './listen.js';

export interface TestOrg {
  orgId: string;
  keyId: string;
  key: string;
  /** supertest agent bound to the app, with this org's key in the authorization header. */
  request: (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string) => supertest.Test;
  /**
   * The same with a second key of the org: a reviewer's. The key that created a request may not
   * decide it (contract C12), so decisions in tests come from this one.
   */
  reviewerKeyId: string;
  reviewerKey: string;
  asReviewer: (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string) => supertest.Test;
}

export interface TestEnv {
  config: Config;
  services: Services;
  app: Express;
  /** The app listening on an ephemeral port, as a client reaches it. */
  baseUrl: string;
  /** The HTTP server behind `baseUrl`, for a test that watches its requests. */
  server: Server;
  http: ReturnType<typeof supertest>;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  createOrg(options?: { plan?: Plan; scopes?: readonly Scope[]; adminEmails?: string[] }): Promise<TestOrg>;
  createKey(orgId: string, scopes: readonly Scope[]): Promise<{ id: string; key: string }>;
  /** A second, independent app over the same database and Redis prefix: another "process". */
  createPeer(): Promise<{ services: Services; app: Express; baseUrl: string; http: ReturnType<typeof supertest> }>;
  close(): Promise<void>;
}

/**
 * A database cloned from the migrated template and a Redis prefix, both private to the caller.
 * `databasePort` sends the app's connections through another port (a proxy a test can break).
 */
export async function createTestEnv(
  overrides: Record<string, string> = {},
  { databasePort }: { databasePort?: number } = {},
): Promise<TestEnv> {
  const suffix = randomBytes(6).toString('hex');
  const database = `approval_gate_test_${suffix}`;
  await onServer((client) => client.query(`CREATE DATABASE ${database} TEMPLATE ${inject('templateDatabase')}`));

  // PUBLIC_URL is where the app listens, so that the console's own requests come from its origin.
  const port = await freePort();
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    // Every test's client is 127.0.0.1; the limit per address has tests of its own.
    SIGN_IN_ATTEMPTS_PER_ADDRESS: '100000',
    DATABASE_URL: databasePort === undefined ? databaseUrl(database) : databaseUrl(database).replace(/:\d+\//, `:${databasePort}/`),
    DATABASE_POOL_SIZE: '10',
    REDIS_PREFIX: `agtest:${suffix}`,
    ...overrides,
  });
  const { lines: logs, sink: logSink } = recordLogLines();
  const logger = createLogger(config, 'test', logSink);
  const started: { services: Services; server: Server }[] = [];
  const start = async () => {
    const services = await createServices(config, logger, 'web');
    const app = createApp(services);
    const server = createHttpServer(app);
    answerClientErrors(server);
    // The first app listens at PUBLIC_URL's port, its peers anywhere.
    const listening = started.length === 0 ? listen(server, port, '127.0.0.1').then(() => port) : listenOnLoopback(server);
    const baseUrl = `http://127.0.0.1:${await listening}`;
    started.push({ services, server });
    return { services, app, server, baseUrl, http: supertest(baseUrl) };
  };
  const { services, app, server, baseUrl, http } = await start();

  // Service keys written as rows: the CLI's way (OrgService.createApiKey, tested in cli.test.ts)
  // also records key.created on the organization's chain, two events before anything a test audits.
  const createKey = async (orgId: string, scopes: readonly Scope[]) => {
    const key = generateApiKey();
    const { id } = await services.db.apiKey.create({ data: { orgId, scopes: [...scopes], keyHash: hashApiKey(key) } });
    return { id, key };
  };

  return {
    config,
    services,
    app,
    server,
    baseUrl,
    http,
    logs,
    createKey,
    async createOrg({ plan = 'pro', scopes = SCOPES, adminEmails = [] } = {}) {
      const { orgId } = await services.orgs.createOrganization({ name: `org-${suffix}`, plan, adminEmails });
      const { id: keyId, key } = await createKey(orgId, scopes);
      const reviewer = await createKey(orgId, scopes);
      return {
        orgId,
        keyId,
        key,
        request: (method, path) => http[method](path).set('authorization', `Bearer ${key}`),
        reviewerKeyId: reviewer.id,
        reviewerKey: reviewer.key,
        asReviewer: (method, path) => http[method](path).set('authorization', `Bearer ${reviewer.key}`),
      };
    },
    createPeer: start,
    async close() {
      await Promise.all(
        started.map(async ({ services: peer, server }) => {
          server.closeAllConnections();
          await new Promise((resolve) => server.close(resolve));
          await peer.close();
        }),
      );
      await onServer((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      // A cluster is the test's own and goes with it.
      if (config.REDIS_URL.kind === 'server') await deleteRedisKeys(config.REDIS_URL.url, `${config.REDIS_PREFIX}:*`);
    },
  };
}

async function deleteRedisKeys(url: string, pattern: string): Promise<void> {
  // No retries: an env pointed at an unreachable Redis on purpose has nothing there to delete.
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch {
    return;
  }
  try {
    for await (const keys of redis.scanStream({ match: pattern, count: 500 })) {
      if ((keys as string[]).length > 0) await redis.unlink(...(keys as string[]));
    }
  } finally {
    await redis.quit();
  }
}

/**
 * A test file's env and default organization: created before its tests, dropped after them.
 * `assign` hands both to the file's own variables.
 */
export function useTestEnv(assign: (created: { env: TestEnv; org: TestOrg }) => void, overrides: Record<string, string> = {}): void {
  let env: TestEnv | undefined;
  beforeAll(async () => {
    env = await createTestEnv(overrides);
    assign({ env, org: await env.createOrg() });
  });
  afterAll(() => env?.close());
}
