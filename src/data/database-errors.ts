/**
 * Whether an error means the database could not be reached or stopped answering, rather than
 * that a statement failed: the request may be retried once it is back (503, not 500).
 */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000', // connection_exception
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  'P1001', // Prisma: can't reach database server
  'P1002', // Prisma: database server timed out
  'P1017', // Prisma: server closed the connection
  'P2024', // Prisma: timed out fetching a connection from the pool
]);

const UNREACHABLE_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error|connect ECONNREFUSED|DatabaseNotReachable|Unable to start a transaction in the given time/i;

export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const candidate = error as { code?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
  if (typeof candidate.code === 'string' && UNREACHABLE_CODES.has(candidate.code)) return true;
  if (typeof candidate.message === 'string' && UNREACHABLE_MESSAGES.test(candidate.message)) return true;
  return isDatabaseUnavailable(candidate.cause, depth + 1) || isDatabaseUnavailable(candidate.meta?.driverAdapterError, depth + 1);
}

/**
 * Whether a statement broke a unique constraint (Prisma's P2002, PostgreSQL's 23505 from raw SQL):
 * two writers claimed the same value, and the caller answers 409 rather than 500.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'P2002' || code === '23505';
}
