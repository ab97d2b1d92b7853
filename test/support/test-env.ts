import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import type { Scope } from '../../src/modules/orgs/tenant.js';
import { SCOPES, type Plan } from '../../src/modules/orgs/tenant.js';
import { createServices, type Services } from '../../src/services.js';
import { databaseUrl, onServer, TEMPLATE_DATABASE } from './databases.js';

export interface TestOrg {
  orgId: string;
  keyId: string;
  key: string;
  /** supertest agent bound to the app, with this org's key in the authorization header. */
  request: (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string) => supertest.Test;
}

export interface TestEnv {
  config: Config;
  services: Services;
  app: Express;
  http: ReturnType<typeof supertest>;
  createOrg(options?: { plan?: Plan; scopes?: readonly Scope[]; adminEmails?: string[] }): Promise<TestOrg>;
  createKey(orgId: string, scopes: readonly Scope[]): Promise<{ id: string; key: string }>;
  /** A second, independent app over the same database and Redis prefix: another "process". */
  createPeer(): Promise<{ services: Services; app: Express }>;
  close(): Promise<void>;
}

/** A database cloned from the migrated template and a Redis prefix, both private to the caller. */
export async function createTestEnv(overrides: Record<string, string> = {}): Promise<TestEnv> {
  const suffix = randomBytes(6).toString('hex');
  const database = `approval_gate_test_${suffix}`;
  await onServer((client) => client.query(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE_DATABASE}`));

  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl(database),
    DATABASE_POOL_SIZE: '10',
    REDIS_PREFIX: `agtest:${suffix}`,
    ...overrides,
  });
  const logger = pino({ level: 'silent' });
  const started: Services[] = [];
  const start = async () => {
    const services = await createServices(config, logger);
    started.push(services);
    return { services, app: createApp(services) };
  };
  const { services, app } = await start();
  const http = supertest(app);

  const createKey = (orgId: string, scopes: readonly Scope[]) => services.orgs.createApiKey({ orgId, scopes: [...scopes] });

  return {
    config,
    services,
    app,
    http,
    createKey,
    async createOrg({ plan = 'pro', scopes = SCOPES, adminEmails = [] } = {}) {
      const { orgId } = await services.orgs.createOrganization({ name: `org-${suffix}`, plan, adminEmails });
      const { id: keyId, key } = await createKey(orgId, scopes);
      return { orgId, keyId, key, request: (method, path) => http[method](path).set('authorization', `Bearer ${key}`) };
    },
    createPeer: start,
    async close() {
      await Promise.all(started.map((s) => s.close()));
      await onServer((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      await deleteRedisKeys(config.REDIS_URL, `${config.REDIS_PREFIX}:*`);
    },
  };
}

async function deleteRedisKeys(url: string, pattern: string): Promise<void> {
  const redis = new Redis(url);
  try {
    for await (const keys of redis.scanStream({ match: pattern, count: 500 })) {
      if ((keys as string[]).length > 0) await redis.unlink(...(keys as string[]));
    }
  } finally {
    await redis.quit();
  }
}
