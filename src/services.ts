import type { Config } from './config.js';
import { ConsumerTaskStore } from './consumers/consumer-task-store.js';
import { createDataLayer, createPool, poolOptionsOf, poolSql } from './data/database.js';
import { ReadRouting, RecentWriters, ReplicaReads } from './data/read-replica.js';
import type { ConsumerContext, EventConsumer } from './consumers/consumer.js';
import { CONSUMERS } from './consumers/registry.js';
import { webhookDeliveryJob } from './consumers/webhooks/webhook-delivery.js';
import { auditExportJob } from './jobs/audit-export.js';
import { JobQueues } from './jobs/job-queues.js';
import type { JobDefinition } from './jobs/job.js';
import { STANDALONE_JOBS } from './jobs/registry.js';
import { slackEphemeralJob } from './jobs/slack-ephemeral.js';
import { BackgroundWork, ENQUEUE_HINT_TIMEOUT_MS } from './lib/background-work.js';
import type { Logger } from './lib/logger.js';
import { UnavailableError } from './lib/errors.js';
import { Mailbox } from './lib/mailbox.js';
import { createMailer } from './lib/mailer.js';
import { Metrics } from './lib/metrics.js';
import { closeRedis, createRedis, type RedisClient } from './lib/redis.js';
import { withTimeout } from './lib/time.js';
import { ApprovalFeed } from './modules/approvals/approval-feed.js';
import { ApprovalService } from './modules/approvals/approval-service.js';
import { ApprovalSettlements } from './modules/approvals/approval-settlements.js';
import { AuditService } from './modules/audit/audit-service.js';
import { DecisionLinkService } from './modules/links/decision-link-service.js';
import { AuditTree } from './modules/audit/audit-tree.js';
import { CheckpointService } from './modules/audit/checkpoint-service.js';
import { parseSigningKey } from './lib/signing-key.js';
import { MemberService } from './modules/members/member-service.js';
import { NotificationStore } from './modules/notifications/notification-store.js';
import { OrgService } from './modules/orgs/org-service.js';
import { OutboxSignal } from './modules/outbox/outbox-signal.js';
import { OutboxStore } from './modules/outbox/outbox-store.js';
import { PolicyService } from './modules/policies/policy-service.js';
import { SlackRateLimiter } from './modules/slack/slack-rate-limiter.js';
import { SlackInteractions } from './modules/slack/slack-interactions.js';
import { SlackService } from './modules/slack/slack-service.js';
import { TeamsActivities } from './modules/teams/teams-activities.js';
import { TeamsService } from './modules/teams/teams-service.js';
import { PushService } from './modules/push/push-service.js';
import { secretBoxOf } from './lib/secret-box.js';
import { DeliveryService } from './modules/webhooks/delivery-service.js';
import { DeliveryStore } from './modules/webhooks/delivery-store.js';
import { EndpointSlots } from './modules/webhooks/endpoint-slots.js';
import { WebhookSecrets } from './modules/webhooks/webhook-secrets.js';
import { WebhookService } from './modules/webhooks/webhook-service.js';
import { allowsPrivateWebhookUrls } from './modules/webhooks/webhook-url-guard.js';

/**
 * What the process is for. `web` holds long-polls, so it subscribes to settlements; a `worker`
 * only publishes them; a `cli` run needs neither but shares the rest.
 */
export type ProcessRole = 'web' | 'worker' | 'cli';

/**
 * Everything a process needs, wired once from the configuration: the one composition root. The
 * worker hands consumers the part of it in ConsumerContext; no domain service is handed it whole.
 */
export interface Services extends ConsumerContext {
  redis: RedisClient;
  /** Where reads that may be a moment behind go (the read replica, when there is one). */
  reads: ReadRouting;
  settlements: ApprovalSettlements;
  /** The mail kept instead of sent, outside production (null in production). */
  mailbox: Mailbox | null;
  outboxSignal: OutboxSignal;
  /** The consumers the relay hands domain events to (src/consumers/registry.ts). */
  consumers: readonly EventConsumer<any>[];
  jobs: JobQueues;
  metrics: Metrics;
  orgs: OrgService;
  policies: PolicyService;
  webhooks: WebhookService;
  audit: AuditService;
  /** Each organization's audit events as a Merkle tree, and its proofs. */
  auditTree: AuditTree;
  /** Buttons pressed and modals submitted in Slack. */
  slackInteractions: SlackInteractions;
  /** Card actions pressed in Teams. */
  teamsActivities: TeamsActivities;
  /** Database and Redis reachable, for /readyz. */
  checkReadiness(): Promise<{ postgres: boolean; redis: boolean }>;
  close(): Promise<void>;
}

/**
 * Every queue: the standalone jobs and each consumer's. Producers, the roles of WORKER_QUEUES,
 * worker concurrency and Bull Board's list all come from here.
 */
export function jobsFor(consumers: readonly EventConsumer<any>[]): JobDefinition<any>[] {
  return [...STANDALONE_JOBS, ...consumers.flatMap((consumer) => (consumer.job ? [consumer.job] : []))];
}

export const JOBS = jobsFor(CONSUMERS);

/** Readiness answers within this: a database or Redis that hangs is as unready as one that refuses. */
const READINESS_TIMEOUT_MS = 1_000;

export async function createServices(
  config: Config,
  logger: Logger,
  role: ProcessRole,
  { consumers = CONSUMERS }: { consumers?: readonly EventConsumer<any>[] } = {},
): Promise<Services> {
  const data = createDataLayer(config.DATABASE_URL, poolOptionsOf(config), (error) =>
    logger.warn({ err: error }, 'idle database connection lost; the pool replaces it'),
  );
  const { db, sql } = data;
  const redis = createRedis(config.REDIS_URL, 'commands', 'commands', logger);
  const readUrl = config.DATABASE_READ_URL;
  const replicaPool = readUrl
    ? createPool(readUrl, poolOptionsOf(config), (error) =>
        logger.warn({ err: error }, 'idle read replica connection lost; the pool replaces it'),
      )
    : null;
  const replica =
    replicaPool && readUrl ? new ReplicaReads(sql, poolSql(replicaPool), readUrl, config.DATABASE_READ_MAX_LAG_MS, logger) : null;
  await replica?.start();
  const writers = replica ? new RecentWriters(redis, config.REDIS_PREFIX, config.DATABASE_READ_MAX_LAG_MS, logger) : null;
  const reads = new ReadRouting(sql, replica, writers);
  const readable = { ...data, reads };
  const subscriber = role === 'web' ? createRedis(config.REDIS_URL, 'subscriber', 'settlements', logger) : null;
  const background = new BackgroundWork(logger, ENQUEUE_HINT_TIMEOUT_MS);
  const settlements = new ApprovalSettlements(redis, subscriber, config.REDIS_PREFIX, logger, background);
  const approvalFeed = new ApprovalFeed(sql, redis, subscriber, config.REDIS_PREFIX, logger);
  await Promise.all([settlements.start(), approvalFeed.start()]);
  const outboxSignal = new OutboxSignal(redis, config.REDIS_PREFIX, background);
  const jobs = new JobQueues(redis, config.REDIS_PREFIX, logger, jobsFor(consumers));
  // Development keeps unsent mail for the mailbox page; production never does (see docs/development.md).
  const mailbox = config.NODE_ENV === 'production' ? null : new Mailbox(redis, config.REDIS_PREFIX);
  const mailer = createMailer(config, logger, mailbox);
  const metrics = new Metrics(role);
  const outbox = new OutboxStore(sql);
  metrics.onScrape(async () => metrics.outboxLag.set(await outbox.lagSeconds()));
  metrics.onScrape(async () => {
    const depths = await Promise.all(
      jobs.definitions.map(async (definition) => [definition.queue, await jobs.queue(definition).getJobCounts()] as const),
    );
    for (const [queue, counts] of depths)
      for (const [state, count] of Object.entries(counts)) metrics.queueDepth.set({ queue, state }, count);
  });
  metrics.onScrape(async () => metrics.longPollWaiters.set(settlements.waiting));

  const orgs = new OrgService(data);
  const members = new MemberService(data, { outboxSignal }, { publicUrl: config.PUBLIC_URL });
  const policies = new PolicyService(readable);
  const auditTree = new AuditTree(data);
  const checkpoints = new CheckpointService(
    data,
    config.AUDIT_SIGNING_KEY ? parseSigningKey(config.AUDIT_SIGNING_KEY) : null,
    auditTree,
    new URL(config.PUBLIC_URL).host,
  );
  const approvals = new ApprovalService(
    readable,
    policies,
    { settlements, outboxSignal, metrics },
    {
      freeTierMonthlyApprovals: config.FREE_TIER_MONTHLY_APPROVALS,
      orphanTimeoutSeconds: config.ORPHAN_TIMEOUT_SECONDS,
      writeBatch: {
        maxBatch: config.WRITE_BATCH_MAX,
        maxInFlight: config.WRITE_BATCH_IN_FLIGHT,
        // Waiting for a write slot is waiting for the database, bounded as waiting for a connection is.
        queueDeadline: { ms: config.DATABASE_CONNECT_TIMEOUT_MS, error: () => new UnavailableError() },
      },
    },
    checkpoints,
  );
  const allowPrivate = allowsPrivateWebhookUrls(config);
  const secrets = secretBoxOf(config);
  const webhookSecrets = new WebhookSecrets(secrets);
  const slots = new EndpointSlots(redis, config.REDIS_PREFIX, config.WEBHOOK_ENDPOINT_CONCURRENCY, config.WEBHOOK_SLOT_HOLD_MS);
  const deliveries = new DeliveryService(new DeliveryStore(db, sql), slots, jobs.producer(webhookDeliveryJob), metrics, logger, {
    allowPrivate,
    concurrency: config.WEBHOOK_DELIVERY_CONCURRENCY,
    backoffScale: config.WEBHOOK_BACKOFF_SCALE,
    stalledGraceMs: config.DELIVERY_STALLED_GRACE_MS,
    secrets: webhookSecrets,
    receipts: checkpoints,
  });
  const webhooks = new WebhookService(db, { deliveries, logger }, { allowPrivateUrls: allowPrivate, secrets: webhookSecrets });
  const audit = new AuditService(
    readable,
    { exportQueue: jobs.producer(auditExportJob), logger, checkpoints },
    {
      databaseUrl: config.DATABASE_URL,
      exportDir: config.EXPORT_DIR,
      exportRetentionHours: config.EXPORT_RETENTION_HOURS,
    },
  );
  const slack = new SlackService(db, { apiUrl: config.SLACK_API_URL, secrets }, { outboxSignal, logger });
  const slackInteractions = new SlackInteractions({
    slack,
    approvals,
    members,
    ephemeralQueue: jobs.producer(slackEphemeralJob),
    config,
    logger,
  });
  const teams = new TeamsService(
    db,
    {
      loginUrl: config.TEAMS_LOGIN_URL,
      serviceUrl: config.TEAMS_SERVICE_URL,
      openIdMetadataUrl: config.TEAMS_OPENID_METADATA_URL,
      tokenIssuer: config.TEAMS_TOKEN_ISSUER,
      secrets,
    },
    { outboxSignal, logger },
  );

  return {
    config,
    logger,
    db,
    sql,
    redis,
    reads,
    settlements,
    approvalFeed,
    outboxSignal,
    outbox,
    consumers,
    consumerTasks: new ConsumerTaskStore(sql),
    jobs,
    mailer,
    mailbox,
    metrics,
    orgs,
    members,
    policies,
    approvals,
    webhooks,
    deliveries,
    audit,
    notifications: new NotificationStore(sql),
    decisionLinks: new DecisionLinkService(sql, approvals, { publicUrl: config.PUBLIC_URL }),
    slack,
    slackInteractions,
    teams,
    teamsActivities: new TeamsActivities({ teams, approvals, members, config }),
    push: new PushService(db, {
      vapid:
        config.VAPID_PUBLIC_KEY && config.VAPID_PRIVATE_KEY
          ? { publicKey: config.VAPID_PUBLIC_KEY, privateKey: config.VAPID_PRIVATE_KEY, subject: config.VAPID_SUBJECT }
          : null,
      allowPrivate,
    }),
    slackRateLimiter: new SlackRateLimiter(redis, config.REDIS_PREFIX, config.SLACK_MESSAGE_INTERVAL_MS),
    checkpoints,
    auditTree,
    async checkReadiness() {
      const answers = (check: Promise<boolean>, what: string) => withTimeout(check, READINESS_TIMEOUT_MS, what).catch(() => false);
      const [postgres, redisUp] = await Promise.all([
        answers(
          sql.query(null, 'SELECT 1', []).then(() => true),
          'database readiness',
        ),
        answers(
          redis.ping().then((reply) => reply === 'PONG'),
          'redis readiness',
        ),
      ]);
      return { postgres, redis: redisUp };
    },
    async close() {
      settlements.close();
      approvalFeed.close();
      mailer.close();
      await background.finish();
      await withTimeout(jobs.close(), 1000, 'closing queues').catch(() => {});
      replica?.close();
      await Promise.allSettled([data.close(), replicaPool?.end(), closeRedis(redis), ...(subscriber ? [closeRedis(subscriber)] : [])]);
    },
  };
}
