import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { redisTargetSchema } from './lib/redis-target.js';
import { parseSigningKey } from './lib/signing-key.js';
import { validate } from './lib/validation.js';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const positiveInt = z.coerce.number().int().positive();

/** This package's directory, whether the code runs from src/ (tsx) or from dist/src/ (compiled). */
export function packageRoot(): string {
  let directory = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(directory, 'package.json'))) {
    const parent = path.dirname(directory);
    if (parent === directory) return process.cwd();
    directory = parent;
  }
  return directory;
}

const environmentSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** The service's address as people reach it (behind a proxy, the public https URL). */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.url().default('postgresql://postgres@127.0.0.1:5432/approval_gate'),
  /**
   * A streaming replica of DATABASE_URL: listing, audit reads, verification and exports read from
   * it while it is less than DATABASE_READ_MAX_LAG_MS behind, and a principal's reads go to the
   * primary for as long after its own writes (docs/operations.md#read-replica).
   */
  DATABASE_READ_URL: z.url().optional(),
  DATABASE_READ_MAX_LAG_MS: positiveInt.default(2_000),
  /** Connections per process; the web process holds its audit-chain lock for one statement only. */
  DATABASE_POOL_SIZE: positiveInt.default(20),
  /** Waiting for a database connection, and for a statement's answer: past these, 503 instead of a hanging request. */
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(2_000),
  DATABASE_QUERY_TIMEOUT_MS: positiveInt.default(4_000),
  /** How often an event stream (GET /v1/approvals/events) sends a keep-alive and checks its credential again. */
  EVENT_STREAM_HEARTBEAT_MS: positiveInt.default(15_000),
  /** Group commit of creations and votes: the most one statement takes, and how many run at once. */
  WRITE_BATCH_MAX: positiveInt.max(1000).default(64),
  WRITE_BATCH_IN_FLIGHT: positiveInt.default(1),
  /** One server (redis://), or a cluster named by some of its nodes (redis+cluster://host:port,host:port); see src/lib/redis.ts. */
  REDIS_URL: redisTargetSchema.prefault('redis://127.0.0.1:6379'),
  /** Prefix for every Redis key and channel, so several deployments (or test files) share one Redis. */
  REDIS_PREFIX: z.string().min(1).default('ag'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FREE_TIER_MONTHLY_APPROVALS: z.coerce.number().int().min(0).default(100),
  ORPHAN_TIMEOUT_SECONDS: positiveInt.default(86_400),
  /** Upper bound on how long SIGTERM waits for in-flight work before the process exits. */
  SHUTDOWN_TIMEOUT_MS: positiveInt.max(30_000).default(25_000),
  WEBHOOK_ALLOW_PRIVATE_URLS: booleanFlag.optional(),
  /** Multiplies the webhook retry schedule (see docs/webhooks.md); tests run it in seconds with 0.001. */
  WEBHOOK_BACKOFF_SCALE: z.coerce.number().positive().default(1),
  /** Delivery attempts one worker process runs at once. */
  WEBHOOK_DELIVERY_CONCURRENCY: positiveInt.default(50),
  /** Attempts in flight to one endpoint across all workers, so a slow endpoint cannot take every slot. */
  WEBHOOK_ENDPOINT_CONCURRENCY: positiveInt.default(10),
  /** How long an attempt may hold its endpoint slot: past the 15 s delivery deadline, with margin for clock drift. */
  WEBHOOK_SLOT_HOLD_MS: positiveInt.default(30_000),
  /** Comma-separated roles of a worker process; all when unset (see workers/worker-runtime.ts). */
  WORKER_QUEUES: z.string().optional(),
  /**
   * Expiry jobs one worker process runs at once. Running ones share their reads and their commits
   * (group commit), so many at once cost little, and fewer queue deadlines falling due together.
   */
  EXPIRY_CONCURRENCY: positiveInt.default(100),
  /**
   * The longest a worker's deadline watcher waits before it looks at the pending deadlines again,
   * and how far ahead of a deadline it hands the approval over (as a delayed job); below the
   * shortest timeout (1 s), so that every deadline is seen before it falls due.
   */
  EXPIRY_WATCH_INTERVAL_MS: positiveInt.max(500).default(250),
  /**
   * How long before its deadline an expiry job starts: it reads the approval then and waits out
   * the rest in the worker, so that neither the queue's lateness nor the read falls after the
   * deadline. At most 450, so that with EXPIRY_WATCH_INTERVAL_MS it stays below the shortest
   * timeout (1 s): the watcher looks that far ahead.
   */
  EXPIRY_LEAD_MS: z.coerce.number().int().min(0).max(450).default(250),
  /**
   * The longest a worker's reminder watcher waits before it looks for due reminders again
   * (docs/members-and-channels.md#reminders): how late a reminder may be, at most.
   */
  REMINDER_WATCH_INTERVAL_MS: positiveInt.max(60_000).default(1_000),
  /** Jobs of each event consumer (src/consumers/) one worker process runs at once. */
  CONSUMER_CONCURRENCY: positiveInt.default(5),
  /** Bulk audit exports one worker process writes at once; each holds a database connection. */
  AUDIT_EXPORT_CONCURRENCY: positiveInt.default(2),
  /** How often the safety nets look for approvals whose expiry was missed, and deliveries whose retry job was lost. */
  EXPIRY_SWEEP_INTERVAL_MS: positiveInt.default(5_000),
  DELIVERY_SWEEP_INTERVAL_MS: positiveInt.default(30_000),
  /** Outbox polling when no commit signal arrives (Redis pub/sub lost, or another relay busy). */
  OUTBOX_POLL_INTERVAL_MS: positiveInt.default(1_000),
  /** Domain events one relay pass hands to the consumers. */
  OUTBOX_BATCH_SIZE: positiveInt.default(200),
  /** How long a relay's claim on outbox rows lasts before another relay may take them. */
  OUTBOX_LEASE_MS: positiveInt.default(30_000),
  /** How often consumer tasks whose job was lost are looked for, and how old a pending one must be. */
  CONSUMER_SWEEP_INTERVAL_MS: positiveInt.default(30_000),
  CONSUMER_TASK_GRACE_MS: positiveInt.default(60_000),
  /** How overdue a webhook delivery's next attempt must be before the sweeper assumes its job was lost. */
  DELIVERY_STALLED_GRACE_MS: positiveInt.default(60_000),
  /** How long a job may run without renewing its lock before another worker takes it over. */
  WORKER_LOCK_DURATION_MS: positiveInt.default(30_000),
  /** Outgoing mail, e.g. smtp://user:pass@smtp.example.com:587; without it mail is logged instead. */
  SMTP_URL: z.url().optional(),
  MAIL_FROM: z.string().min(3).default('Approval Gate <no-reply@approval-gate.invalid>'),
  /** Bearer token of GET /metrics (Prometheus); the endpoint does not exist without it. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Where a worker process serves its /metrics (with METRICS_TOKEN); web processes serve theirs on PORT. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Base URL of the Slack Web API; tests point it at a local stand-in. */
  SLACK_API_URL: z.url({ protocol: /^https?$/ }).default('https://slack.com/api/'),
  /** At most one Slack message (post or update) per channel this often, across all workers (Slack allows about one a second). */
  SLACK_MESSAGE_INTERVAL_MS: positiveInt.default(1_000),
  /** Entra's login host, where the Teams bot gets its tokens (client credentials); tests point it at a local stand-in. */
  TEAMS_LOGIN_URL: z.url({ protocol: /^https?$/ }).default('https://login.microsoftonline.com'),
  /** The Bot Connector service the Teams bot posts through (the team's region; the global one routes to it). */
  TEAMS_SERVICE_URL: z.url({ protocol: /^https?$/ }).default('https://smba.trafficmanager.net/teams/'),
  /** The Bot Framework's OpenID metadata, whose jwks_uri lists the keys that sign activities sent to the bot. */
  TEAMS_OPENID_METADATA_URL: z.url({ protocol: /^https?$/ }).default('https://login.botframework.com/v1/.well-known/openidconfiguration'),
  /** The issuer every token of an activity sent to the bot must name. */
  TEAMS_TOKEN_ISSUER: z.string().min(1).default('https://api.botframework.com'),
  /** Web Push (VAPID, RFC 8292): the public key (base64url, 65 bytes uncompressed P-256) browsers subscribe with; push is off without it. */
  VAPID_PUBLIC_KEY: z
    .string()
    .regex(/^[A-Za-z0-9_-]{87}$/, 'VAPID_PUBLIC_KEY must be an uncompressed P-256 public key, base64url (npx web-push generate-vapid-keys)')
    .optional(),
  /** Its private key (base64url, 32 bytes). */
  VAPID_PRIVATE_KEY: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/, 'VAPID_PRIVATE_KEY must be a P-256 private key, base64url (npx web-push generate-vapid-keys)')
    .optional(),
  /** Who push services may contact about this sender: a mailto: or https: URL. */
  VAPID_SUBJECT: z
    .string()
    .regex(/^(mailto:|https:\/\/)\S+$/, 'VAPID_SUBJECT must be a mailto: or https: URL')
    .default('mailto:operations@approval-gate.invalid'),
  /**
   * 32 random bytes, base64: seals the secrets the service reads back (Slack's bot token and
   * signing secret, the Teams bot's app secret, webhook signing secrets) at rest with AES-256-GCM.
   * Without it no Slack workspace or Teams bot can be connected, and webhook secrets are stored as they are.
   */
  SECRETS_ENCRYPTION_KEY: z
    .string()
    .refine(isSecretsKey, 'SECRETS_ENCRYPTION_KEY must be 32 random bytes, base64-encoded (openssl rand -base64 32)')
    .optional(),
  /**
   * Keys that sealed secrets before SECRETS_ENCRYPTION_KEY, comma-separated: read for opening only,
   * until `secrets:reseal` has sealed everything under the current key (docs/operations.md).
   */
  SECRETS_ENCRYPTION_KEYS_OLD: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    )
    .refine(
      (keys) => keys.every(isSecretsKey),
      'SECRETS_ENCRYPTION_KEYS_OLD must be a comma-separated list of keys of 32 random bytes, base64-encoded',
    )
    .default([]),
  /** Basic-auth credentials of Bull Board at /admin/queues; it is not mounted without both. */
  ADMIN_USER: z.string().min(1).optional(),
  ADMIN_PASSWORD: z.string().min(1).optional(),
  /**
   * How many proxies in front of the web process append the address they saw to x-forwarded-for;
   * the client address is taken that many entries from the end (Heroku's router: 1). 0, the
   * default, ignores x-forwarded-for, which a client could otherwise write itself.
   */
  TRUST_PROXY: z.coerce.number().int().min(0).max(10).default(0),
  /** Sign-ins and invite acceptances one client address may try per minute (docs/members-and-channels.md). */
  SIGN_IN_ATTEMPTS_PER_ADDRESS: positiveInt.default(30),
  /** Bulk audit exports as files in this directory, which every web and worker process must share; unset, they are kept in Postgres. */
  EXPORT_DIR: z.string().min(1).optional(),
  /** How long a finished bulk export can be downloaded; then the maintenance queue frees its storage. */
  EXPORT_RETENTION_HOURS: z.coerce.number().positive().default(168),
  /** The built reviewer console that `web` serves at /console (`npm run build` writes dist/console). */
  CONSOLE_DIR: z
    .string()
    .min(1)
    .default(path.join(packageRoot(), 'dist', 'console')),
  /** Ed25519 private key (PKCS#8 PEM or its base64 DER) that signs audit checkpoints (see docs/audit.md); none: no checkpoints. */
  AUDIT_SIGNING_KEY: z
    .string()
    .refine(
      (value) => {
        try {
          parseSigningKey(value);
          return true;
        } catch {
          return false;
        }
      },
      { error: 'AUDIT_SIGNING_KEY must be an Ed25519 private key, PKCS#8 PEM or base64 DER (npm run cli -- audit:keygen makes one)' },
    )
    .optional(),
  /** A checkpoint after this many events, and after this many seconds with new events, whichever first. */
  AUDIT_CHECKPOINT_EVERY: positiveInt.default(1000),
  AUDIT_CHECKPOINT_SECONDS: positiveInt.default(300),
});

/** A key of SECRETS_ENCRYPTION_KEY: 32 bytes in standard base64, which Buffer.from alone would take from any text. */
function isSecretsKey(value: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, 'base64').length === 32;
}

/** Bull Board's password is the one credential a guess can try from anywhere; production needs a real one. */
const ADMIN_PASSWORD_MIN_PRODUCTION = 12;

/** Where links point (invites, decision links): `PUBLIC_URL`, or this machine on `PORT`. */
const configSchema = environmentSchema
  .refine(
    (env) =>
      env.NODE_ENV !== 'production' || typeof env.ADMIN_PASSWORD !== 'string' || env.ADMIN_PASSWORD.length >= ADMIN_PASSWORD_MIN_PRODUCTION,
    {
      path: ['ADMIN_PASSWORD'],
      message: `ADMIN_PASSWORD must be at least ${ADMIN_PASSWORD_MIN_PRODUCTION} characters when NODE_ENV is production`,
      // Checked even when another variable is bad, so that one start names every problem.
      when: () => true,
    },
  )
  .refine((env) => (env.VAPID_PUBLIC_KEY === undefined) === (env.VAPID_PRIVATE_KEY === undefined), {
    path: ['VAPID_PRIVATE_KEY'],
    message: 'VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY go together: set both to turn Web Push on, or neither',
  })
  .refine((env) => env.SECRETS_ENCRYPTION_KEY !== undefined || env.SECRETS_ENCRYPTION_KEYS_OLD.length === 0, {
    path: ['SECRETS_ENCRYPTION_KEYS_OLD'],
    message: 'SECRETS_ENCRYPTION_KEYS_OLD needs SECRETS_ENCRYPTION_KEY: the old keys only open what the current one reseals',
  })
  .transform((env) => ({
    ...env,
    PUBLIC_URL: (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
  }));

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses configuration from an environment map once, at start. Every bad variable is named in
 * the thrown message, so a misconfigured deploy fails with one readable line per problem.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseEnvironment(configSchema, env);
}

function parseEnvironment<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  // An empty variable means unset, as compose files and .env templates write optional ones.
  const result = validate(schema, Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')), 'environment');
  if (!result.success) {
    // Each message names its variable: "PORT must be an integer from 0 to 65535". One problem is one line.
    const problems = result.errors.map((error) => error.message);
    throw new ConfigError(
      problems.length === 1
        ? `Invalid environment configuration: ${problems[0]}`
        : `Invalid environment configuration:\n${problems.map((problem) => `  ${problem}`).join('\n')}`,
    );
  }
  return result.data;
}
