import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir, sqlFunctionsDir } from '../src/db/migrator.js';
import { applySqlFunctions, readSqlFunctions, type SqlFunction } from '../src/db/sql-functions.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let files: SqlFunction[];

beforeAll(async () => {
  env = await createTestEnv();
  files = await readSqlFunctions(sqlFunctionsDir);
});
afterAll(() => env.close());

interface DatabaseFunction {
  name: string;
  body: string;
  signature: string;
}

function databaseFunctions(): Promise<DatabaseFunction[]> {
  return env.services.sql.query<DatabaseFunction>(
    null,
    `SELECT proname AS name, prosrc AS body, oid::regprocedure::text AS signature FROM pg_proc
     WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'ag\\_%' ORDER BY proname`,
    [],
  );
}

describe('SQL functions, one file each', () => {
  it('the database holds exactly the functions of prisma/functions, each with the body of its file', async () => {
    const defined = await databaseFunctions();
    expect(defined.map((fn) => fn.name)).toEqual(files.map((file) => file.name).sort());
    for (const file of files) {
      const [inDatabase] = defined.filter((fn) => fn.name === file.name);
      expect(inDatabase!.body, file.name).toBe(file.body);
    }
  });

  it('no migration from the seam on carries a function body: the files are the only source', async () => {
    // Migrations before it were applied in the field with their bodies; that history stays as it was.
    const later = (await readdir(migrationsDir)).filter((name) => name >= '20261123115558' && !name.endsWith('.toml'));
    expect(later.length).toBeGreaterThan(0);
    for (const name of later) {
      const sql = await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8');
      expect(sql, name).not.toMatch(/CREATE (OR REPLACE )?FUNCTION/i);
    }
  });

  it('replaces a function whose signature changed and drops one no file defines any more', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'ag-functions-'));
    try {
      for (const file of files) await writeFile(path.join(scratch, `${file.name}.sql`), file.definition);
      // A new argument (a different signature) and a different return type, for one function.
      await writeFile(
        path.join(scratch, 'ag_audit_hash.sql'),
        `CREATE OR REPLACE FUNCTION ag_audit_hash(p_prev_hash text, p_canonical text, p_salt text)
RETURNS bytea
LANGUAGE sql IMMUTABLE
AS $$
  SELECT sha256(convert_to(p_salt || p_prev_hash || p_canonical, 'UTF8'))
$$;
`,
      );
      await rm(path.join(scratch, 'ag_verify_audit_range.sql'));
      await applySqlFunctions(env.config.DATABASE_URL, await readSqlFunctions(scratch));
      const changed = await databaseFunctions();
      expect(changed.filter((fn) => fn.name === 'ag_audit_hash').map((fn) => fn.signature)).toEqual(['ag_audit_hash(text,text,text)']);
      expect(changed.map((fn) => fn.name)).not.toContain('ag_verify_audit_range');

      // And back: applying the real files twice leaves the database exactly as the files say.
      await applySqlFunctions(env.config.DATABASE_URL, files);
      await applySqlFunctions(env.config.DATABASE_URL, files);
      const restored = await databaseFunctions();
      expect(restored.map((fn) => [fn.name, fn.body])).toEqual(
        [...files].sort((a, b) => a.name.localeCompare(b.name)).map((file) => [file.name, file.body]),
      );
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('refuses a file that defines another function than its name says', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'ag-functions-'));
    try {
      await writeFile(
        path.join(scratch, 'ag_one.sql'),
        'CREATE OR REPLACE FUNCTION ag_two() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n',
      );
      await expect(readSqlFunctions(scratch)).rejects.toThrow(/ag_one.sql must define exactly the function ag_one/);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
