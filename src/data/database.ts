import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type Database = PrismaClient;

/** A Prisma client, or the transaction client handed to `$transaction` callbacks. */
export type DatabaseClient = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

export function createDatabase(databaseUrl: string, poolSize: number): Database {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: poolSize });
  return new PrismaClient({ adapter });
}

/**
 * The SQLSTATE of a Postgres error raised under a Prisma query. Our SQL functions raise custom
 * states (see the migrations) that the stores map to outcomes.
 */
export function postgresErrorCode(error: unknown): string | undefined {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } } } | null)?.meta
    ?.driverAdapterError?.cause;
  return cause?.kind === 'postgres' ? cause.originalCode : undefined;
}
