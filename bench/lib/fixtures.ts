// What a benchmark runs against: its own database (migrated from scratch) and Redis prefix on
// 127.0.0.1, and organizations with a key that holds every scope.
import { Redis } from 'ioredis';
import pg from 'pg';
import { createDataLayer } from '../../src/data/database.js';
import { applyMigrations } from '../../src/db/migrator.js';
import { OrgService } from '../../src/modules/orgs/org-service.js';
import { SCOPES } from '../../src/modules/orgs/tenant.js';
import { mapConcurrent } from './concurrency.js';

export const HOST = '127.0.0.1';
export const REDIS_URL = `redis://${HOST}:6379`;
/** The benchmarks make their keys as the CLI does. */
export const BENCH_ACTOR = { type: 'system', id: 'bench' } as const;
const PG_SERVER_URL = `postgresql://postgres@${HOST}:5432`;

export function databaseUrl(name: string): string {
  return `${PG_SERVER_URL}/${name}`;
}

async function onServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(name: string): Promise<void> {
  await onServer(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

/** Drops the database if it is there and makes it again from the migrations; returns its URL. */
export async function recreateDatabase(name: string): Promise<string> {
  await dropDatabase(name);
  const url = databaseUrl(name);
  await applyMigrations(url);
  return url;
}

export async function deleteRedisKeys(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 500 })) {
      const batch = keys as string[];
      if (batch.length > 0) deleted += await redis.unlink(...batch);
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export interface BenchOrg {
  orgId: string;
  /** The agent's key: it creates approvals, and may not decide them (see docs/policies.md). */
  key: string;
  /** The reviewer's key, which decides. */
  reviewerKey: string;
}

/** Organizations on the `pro` plan (no monthly limit), each with an agent's and a reviewer's key holding every scope. */
export async function createOrgs(dbUrl: string, count: number): Promise<BenchOrg[]> {
  const data = createDataLayer(dbUrl, { size: 5, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  try {
    const orgs = new OrgService(data);
    return await mapConcurrent(
      Array.from({ length: count }, (_, i) => i),
      5,
      async (i) => {
        const { orgId } = await orgs.createOrganization({ name: `bench-org-${i}`, plan: 'pro', adminEmails: [] });
        const { key } = await orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'bench' }, BENCH_ACTOR);
        const { key: reviewerKey } = await orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'bench reviewer' }, BENCH_ACTOR);
        return { orgId, key, reviewerKey };
      },
    );
  } finally {
    await data.close();
  }
}
