import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';

/**
 * The SQL functions of the write paths, one file each in prisma/functions/: `<name>.sql` holds
 * exactly one `CREATE OR REPLACE FUNCTION <name>(...)`. The files are the source of truth; the
 * release step applies them after the migrations, so a change to a function is a change to its
 * file, never a copy of its body in a new migration.
 */
export interface SqlFunction {
  name: string;
  /** The whole file, run as one statement. */
  definition: string;
  /** The text between the `$$` quotes: what PostgreSQL keeps as `pg_proc.prosrc`. */
  body: string;
}

/** Every function our SQL defines is named with this prefix; others in the database are not ours. */
const PREFIX = 'ag_';

export async function readSqlFunctions(directory: string): Promise<SqlFunction[]> {
  const files = (await readdir(directory)).filter((file) => file.endsWith('.sql')).sort();
  return Promise.all(
    files.map(async (file) => {
      const name = path.basename(file, '.sql');
      const definition = await readFile(path.join(directory, file), 'utf8');
      const declared = /CREATE OR REPLACE FUNCTION\s+(\w+)\s*\(/.exec(definition)?.[1];
      if (declared !== name || !name.startsWith(PREFIX)) {
        throw new Error(`${file} must define exactly the function ${name} (prefix ${PREFIX}), not ${declared ?? 'nothing'}`);
      }
      const body = /\bAS \$\$([\s\S]*)\$\$;\s*$/.exec(definition)?.[1];
      if (body === undefined) throw new Error(`${file} must end with its body quoted as AS $$ ... $$;`);
      return { name, definition, body };
    }),
  );
}

const SAME_SIGNATURE_REQUIRED = new Set(['42P13', '42725']); // invalid_function_definition, ambiguous_function

/**
 * Brings the database's functions in line with the files, in one transaction: each is created or
 * replaced (in any order: see check_function_bodies below); one whose arguments or return type changed is dropped and created again; and any other
 * `ag_` function (a removed one, or an overload left by a changed signature) is dropped. Concurrent
 * releases are serialized by an advisory lock.
 */
export async function applySqlFunctions(databaseUrl: string, functions: readonly SqlFunction[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('approval-gate:sql-functions'))");
    // A function may call one whose file comes later (ag_decision_refusal calls ag_principal_of):
    // bodies are checked when called, as pg_dump's restores do, not in the files' order.
    await client.query('SET LOCAL check_function_bodies = off');
    for (const fn of functions) {
      await client.query('SAVEPOINT replace_function');
      try {
        await client.query(fn.definition);
      } catch (error) {
        if (!SAME_SIGNATURE_REQUIRED.has((error as pg.DatabaseError).code ?? '')) throw error;
        await client.query('ROLLBACK TO SAVEPOINT replace_function');
        await dropFunctions(client, 'proname = $1', [fn.name]);
        await client.query(fn.definition);
      }
    }
    // What the files do not define any more: removed functions and overloads of old signatures.
    await dropFunctions(client, `proname LIKE '${PREFIX}%' AND NOT (proname, prosrc) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, [
      functions.map((fn) => fn.name),
      functions.map((fn) => fn.body),
    ]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}

async function dropFunctions(client: pg.Client, condition: string, values: unknown[]): Promise<void> {
  const { rows } = await client.query<{ signature: string }>(
    `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace AND ${condition}`,
    values,
  );
  for (const { signature } of rows) await client.query(`DROP FUNCTION ${signature}`);
}
