import { z } from 'zod';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const positiveInt = z.coerce.number().int().positive();

const environmentSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: z.url().default('postgresql://postgres@127.0.0.1:5432/approval_gate'),
  /** Connections per process; the web process holds its audit-chain lock for one statement only. */
  DATABASE_POOL_SIZE: positiveInt.default(20),
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  /** Prefix for every Redis key and channel, so several deployments (or test files) share one Redis. */
  REDIS_PREFIX: z.string().min(1).default('ag'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FREE_TIER_MONTHLY_APPROVALS: z.coerce.number().int().min(0).default(100),
  ORPHAN_TIMEOUT_SECONDS: positiveInt.default(86_400),
  /** Upper bound on how long SIGTERM waits for in-flight work before the process exits. */
  SHUTDOWN_TIMEOUT_MS: positiveInt.max(30_000).default(25_000),
  WEBHOOK_ALLOW_PRIVATE_URLS: booleanFlag.optional(),
});

export type Config = z.infer<typeof environmentSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses configuration from an environment map once, at start. Every bad variable is named in
 * the thrown message, so a misconfigured deploy fails with one readable line per problem.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = environmentSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid environment configuration:\n${problems.join('\n')}`);
  }
  return result.data;
}
