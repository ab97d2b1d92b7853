import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type Database = PrismaClient;

/** A Prisma client, or the transaction client handed to `$transaction` callbacks. */
export type DatabaseClient = Omit<
  PrismaClient,
  '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'
>;

export function createDatabase(databaseUrl: string, poolSize: number): Database {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: poolSize });
  return new PrismaClient({ adapter });
}

/**
 * The SQLSTATE of a Postgres error raised under Prisma, wherever the driver adapter put it.
 * Our SQL functions raise custom states (see the migrations) that the stores map to outcomes.
 */
export function postgresErrorCode(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const candidate = current as {
      code?: unknown;
      meta?: { code?: unknown; driverAdapterError?: unknown };
      cause?: unknown;
      originalCode?: unknown;
    };
    for (const code of [candidate.originalCode, candidate.meta?.code, candidate.code]) {
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    }
    current = candidate.meta?.driverAdapterError ?? candidate.cause;
  }
  return undefined;
}
