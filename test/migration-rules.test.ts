import { mkdtemp, readdir, readFile, rm, symlink, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, markMigrationApplied, migrationsDir } from '../src/db/migrator.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The last migration from before the rule of docs/operations.md ("Releases that overlap"): these
 * built indexes on existing tables inside the migration's transaction, holding off writes while they
 * built. They stay as they were applied; see the upgrade notes there.
 */
const LAST_BEFORE_THE_RULE = '20261129010100_approval_revisions';

/** What a migration's SQL breaks of the rule: index builds on tables it did not create must be CONCURRENTLY, alone in their migration. */
function indexBuildProblems(sql: string): string[] {
  const statements = sql
    .replace(/--.*$/gm, '')
    .split(';')
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  const created = new Set(statements.flatMap((statement) => /^CREATE TABLE (?:IF NOT EXISTS )?"?(\w+)"?/i.exec(statement)?.[1] ?? []));
  const problems: string[] = [];
  for (const statement of statements) {
    const build = /^CREATE (?:UNIQUE )?INDEX (CONCURRENTLY )?.*? ON (?:ONLY )?"?(\w+)"?/i.exec(statement);
    if (!build) continue;
    const [, concurrently, table] = build;
    if (concurrently && statements.length > 1) problems.push(`${statement}: CONCURRENTLY must be the migration's only statement`);
    if (!concurrently && !created.has(table!))
      problems.push(`${statement}: builds an index on the existing table ${table} without CONCURRENTLY`);
  }
  return problems;
}

describe('migrations that build indexes', () => {
  it('build them CONCURRENTLY, alone in their migration, on every table that already exists', async () => {
    const names = (await readdir(migrationsDir, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    const since = names.filter((name) => name > LAST_BEFORE_THE_RULE).sort();
    const problems = await Promise.all(
      since.map(async (name) =>
        indexBuildProblems(await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8')).map((p) => `${name}: ${p}`),
      ),
    );
    expect(problems.flat()).toEqual([]);
  });

  it('tells the ways of building an index apart', async () => {
    const old = await readFile(path.join(migrationsDir, '20261127100343_pending_expiry_index', 'migration.sql'), 'utf8');
    expect(indexBuildProblems(old)).toEqual([
      `CREATE INDEX "approvals_pending_expires_at_idx" ON "approvals"("expires_at") WHERE (status = 'pending'): builds an index on the existing table approvals without CONCURRENTLY`,
    ]);
    expect(indexBuildProblems('-- why\nCREATE INDEX CONCURRENTLY "a_idx" ON "approvals"("agent");')).toEqual([]);
    expect(indexBuildProblems('CREATE TABLE "things" ("id" uuid);\nCREATE UNIQUE INDEX "things_idx" ON "things"("id");')).toEqual([]);
    expect(indexBuildProblems('DROP INDEX "x";\nCREATE INDEX CONCURRENTLY "a_idx" ON "approvals"("agent");')).toHaveLength(1);
  });
});

describe('applying an index built CONCURRENTLY', () => {
  let env: TestEnv;
  let dir: string;

  beforeAll(async () => {
    env = await createTestEnv();
    dir = await mkdtemp(path.join(tmpdir(), 'ag-migrations-'));
  });
  afterAll(async () => {
    await env?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs through the release’s migrator outside a transaction, leaving a valid index', async () => {
    for (const entry of await readdir(migrationsDir)) await symlink(path.join(migrationsDir, entry), path.join(dir, entry));
    await mkdir(path.join(dir, '29991231000000_concurrent_index'));
    await writeFile(
      path.join(dir, '29991231000000_concurrent_index', 'migration.sql'),
      '-- An index on an existing table, built without holding off its writes.\nCREATE INDEX CONCURRENTLY "approvals_agent_test_idx" ON "approvals"("agent");\n',
    );
    expect(await applyMigrations(env.config.DATABASE_URL, dir)).toEqual(['29991231000000_concurrent_index']);
    const [index] = await env.services.sql.query<{ valid: boolean }>(
      null,
      `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'approvals_agent_test_idx'::regclass`,
      [],
    );
    expect(index).toEqual({ valid: true });
  });

  it('records a migration an operator ran by hand as applied, once', async () => {
    const name = '20261127100343_pending_expiry_index';
    await env.services.sql.query(null, 'DELETE FROM _prisma_migrations WHERE migration_name = $1', [name]);
    expect(await markMigrationApplied(env.config.DATABASE_URL, name)).toBe(true);
    expect(await markMigrationApplied(env.config.DATABASE_URL, name)).toBe(false);
    expect(await applyMigrations(env.config.DATABASE_URL)).toEqual([]);
  });
});
