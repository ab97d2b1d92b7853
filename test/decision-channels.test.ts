import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../src/db/migrator.js';
import { DECISION_CHANNELS } from '../src/modules/policies/policy-schemas.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

// The decision channels are declared once, in TypeScript (DECISION_CHANNELS). What cannot import
// that list, the Prisma schema and the SQL its migrations made, is held against it here.

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

describe('the decision channels, declared once', () => {
  it('are the default channels of a policy and of an approval in prisma/schema.prisma', async () => {
    const schema = await readFile(path.join(projectRoot, 'prisma', 'schema.prisma'), 'utf8');
    const defaults = [...schema.matchAll(/^\s*channels\s+String\[\]\s+@default\((\[[^\]]*\])\)/gm)].map(
      ([, list]) => JSON.parse(list!) as string[],
    );
    expect(defaults).toEqual([[...DECISION_CHANNELS], [...DECISION_CHANNELS]]);
  });

  it('are the default of every channels column in the migrated database', async () => {
    const columns = await env.services.sql.query<{ table: string; columnDefault: string }>(
      null,
      `SELECT table_name AS table, column_default AS "columnDefault" FROM information_schema.columns
       WHERE table_schema = 'public' AND column_name = 'channels' ORDER BY table_name`,
      [],
    );
    const defaults = columns.map(({ table, columnDefault }) => [table, [...columnDefault.matchAll(/'([^']*)'/g)].map(([, name]) => name)]);
    expect(defaults).toEqual([
      ['approvals', [...DECISION_CHANNELS]],
      ['policies', [...DECISION_CHANNELS]],
    ]);
  });
});
