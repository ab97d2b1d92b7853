import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import type { Config } from '../config.js';
import { PrismaClient } from '../generated/prisma/client.js';

export type Database = PrismaClient;

/** A Prisma client, or the transaction client handed to `$transaction` callbacks. */
export type DatabaseClient = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

/**
 * Prisma, and the `pg` pool under it. Both share the same connections: Prisma for the model and
 * most queries, the pool for the few statements every request runs (see `Sql`).
 */
export interface DataLayer {
  db: Database;
  sql: Sql;
  close(): Promise<void>;
}

/** The pool the configuration asks for. */
export function poolOptionsOf(
  config: Pick<Config, 'DATABASE_POOL_SIZE' | 'DATABASE_CONNECT_TIMEOUT_MS' | 'DATABASE_QUERY_TIMEOUT_MS'>,
): PoolOptions {
  return {
    size: config.DATABASE_POOL_SIZE,
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
  };
}

export interface PoolOptions {
  size: number;
  /** How long to wait for a connection (new, or free from the pool) before failing. */
  connectTimeoutMs: number;
  /** How long a statement may run before the client gives up on it, unless the statement says otherwise. */
  queryTimeoutMs: number;
}

/**
 * `onIdleConnectionError` hears about pooled connections that die while idle (a database restart,
 * an administrator terminating them): without a listener, pg would crash the process over them.
 * The timeouts turn a database that is down, or frozen, into a prompt error (503 to API clients)
 * instead of requests that hang; the pool reconnects by itself when it is back.
 */
export function createDataLayer(databaseUrl: string, options: PoolOptions, onIdleConnectionError: (error: Error) => void): DataLayer {
  const pool = createPool(databaseUrl, options, onIdleConnectionError);
  const db = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    db,
    sql: poolSql(pool),
    async close() {
      await db.$disconnect();
      await pool.end();
    },
  };
}

/** A pool with the timeouts of `options` (see createDataLayer), for a database only read with `Sql` (a read replica). */
export function createPool(databaseUrl: string, options: PoolOptions, onIdleConnectionError: (error: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.size,
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.queryTimeoutMs,
    keepAlive: true,
  });
  pool.on('error', onIdleConnectionError);
  return pool;
}

/**
 * Runs one SQL statement. On the pool, with a name, it is a named prepared statement: parsed once
 * per connection, and a small part of the client-side CPU of the same query through Prisma,
 * which is what the request hot paths need; a statement
 * whose text varies (optional filters) goes unnamed. Inside a Prisma transaction the same
 * statement runs through the transaction client.
 */
export interface Sql {
  /** `timeoutMs` lets a statement known to run long (verifying a whole chain) outlast the pool's query timeout. */
  query<Row>(name: string | null, text: string, values: unknown[], options?: { timeoutMs?: number }): Promise<Row[]>;
}

/** Statements on the pool, or on one connection of a job's own (named statements are prepared on it). */
export function poolSql(pool: pg.Pool | pg.ClientBase): Sql {
  return {
    async query<Row>(name: string | null, text: string, values: unknown[], options?: { timeoutMs?: number }) {
      const config = { text, values, ...(name ? { name } : {}), ...(options?.timeoutMs ? { query_timeout: options.timeoutMs } : {}) };
      return (await pool.query(config)).rows as Row[];
    },
  };
}

export function transactionSql(tx: DatabaseClient): Sql {
  return {
    query: <Row>(_name: string | null, text: string, values: unknown[]) => tx.$queryRawUnsafe<Row[]>(text, ...values),
  };
}
