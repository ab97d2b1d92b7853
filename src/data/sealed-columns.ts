import { SecretBox } from '../lib/secret-box.js';
import type { Database } from './database.js';

/** A table whose columns hold secrets sealed with SecretBox, each under its own context. */
export interface SealedColumns {
  table: string;
  /** The primary key column, a uuid, by which rows are visited in order. */
  key: string;
  /** Each sealed column and the context its values are sealed under (read from the row's key and org_id). */
  columns: readonly { name: string; context: (row: { key: string; orgId: string }) => string }[];
}

/** What resealing a table did: rows changed, and rows already sealed under the current key. */
export interface ResealCount {
  resealed: number;
  current: number;
}

/** Rows locked and rewritten per transaction: short enough that a request waiting on one row waits little. */
const BATCH_ROWS = 100;

/**
 * Seals every value of the table under the box's current key (see docs/operations.md, rotating the
 * key): a value under an old key is opened and sealed again, a value stored before sealing is
 * sealed, one already under the current key is left alone, so running it twice changes nothing
 * the second time. Rows go in batches, each in a transaction holding their row locks, so a write
 * that lands meanwhile (a secret rotated, a workspace connected) waits for its batch and then
 * writes on top of it, sealed by its own process. A value that does not open stops it, naming
 * the row; the batches before stay done.
 */
export async function resealColumns(db: Database, box: SecretBox, spec: SealedColumns): Promise<ResealCount> {
  const count: ResealCount = { resealed: 0, current: 0 };
  const names = spec.columns.map((column) => column.name);
  let after: string | null = null;
  for (;;) {
    const batch: number = await db.$transaction(async (tx) => {
      // The table and column names are the caller's constants, never input.
      const rows = await tx.$queryRawUnsafe<Record<string, string | null>[]>(
        `SELECT ${spec.key}::text AS key, org_id::text AS "orgId", ${names.join(', ')}
         FROM ${spec.table} WHERE $1::uuid IS NULL OR ${spec.key} > $1::uuid
         ORDER BY ${spec.key} LIMIT ${BATCH_ROWS} FOR UPDATE`,
        after,
      );
      for (const row of rows) {
        const identity = { key: row.key!, orgId: row.orgId! };
        const changes = spec.columns.flatMap(({ name, context }) => {
          const stored = row[name];
          if (stored === null || stored === undefined || box.isCurrent(stored)) return [];
          const plaintext = SecretBox.isSealed(stored) ? openOrExplain(box, stored, context(identity), spec, identity.key, name) : stored;
          return [{ name, value: box.seal(plaintext, context(identity)) }];
        });
        if (changes.length === 0) {
          count.current += 1;
          continue;
        }
        await tx.$executeRawUnsafe(
          `UPDATE ${spec.table} SET ${changes.map((change, i) => `${change.name} = $${i + 2}`).join(', ')} WHERE ${spec.key} = $1::uuid`,
          identity.key,
          ...changes.map((change) => change.value),
        );
        count.resealed += 1;
      }
      after = rows.at(-1)?.key ?? after;
      return rows.length;
    });
    if (batch < BATCH_ROWS) return count;
  }
}

function openOrExplain(box: SecretBox, sealed: string, context: string, spec: SealedColumns, key: string, column: string): string {
  try {
    return box.open(sealed, context);
  } catch (error) {
    throw new Error(`${spec.table} ${key}, ${column}: ${(error as Error).message}`);
  }
}
