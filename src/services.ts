import type { Config } from './config.js';
import { createDataLayer, type Database, type Sql } from './data/database.js';
import type { Logger } from './lib/logger.js';
import { withTimeout } from './lib/time.js';
import { closeRedis, createRedisConnection, createRedisSubscriber } from './lib/redis.js';
import type { Redis } from 'ioredis';
import { ApprovalService } from './modules/approvals/approval-service.js';
import { ApprovalSettlements } from './modules/approvals/approval-settlements.js';
import { AuditService } from './modules/audit/audit-service.js';
import { OutboxSignal } from './modules/outbox/outbox-signal.js';
import { JobProducers } from './queues/job-producers.js';
import { OrgService } from './modules/orgs/org-service.js';
import { PolicyService } from './modules/policies/policy-service.js';
import { WebhookService } from './modules/webhooks/webhook-service.js';
import { allowsPrivateWebhookUrls } from './modules/webhooks/webhook-url-guard.js';

/** Everything a process needs, wired once from the configuration (the composition root). */
export interface Services {
  config: Config;
  logger: Logger;
  db: Database;
  sql: Sql;
  redis: Redis;
  settlements: ApprovalSettlements;
  outboxSignal: OutboxSignal;
  jobs: JobProducers;
  orgs: OrgService;
  policies: PolicyService;
  approvals: ApprovalService;
  webhooks: WebhookService;
  audit: AuditService;
  /** Database and Redis reachable, for /readyz. */
  checkReadiness(): Promise<{ postgres: boolean; redis: boolean }>;
  close(): Promise<void>;
}

export async function createServices(config: Config, logger: Logger): Promise<Services> {
  const data = createDataLayer(config.DATABASE_URL, config.DATABASE_POOL_SIZE, (error) =>
    logger.warn({ err: error }, 'idle database connection lost; the pool replaces it'),
  );
  const { db, sql } = data;
  const redis = createRedisConnection(config.REDIS_URL, 'commands', logger);
  const subscriber = createRedisSubscriber(config.REDIS_URL, 'settlements', logger);
  const settlements = new ApprovalSettlements(redis, subscriber, config.REDIS_PREFIX, logger);
  await settlements.start();
  const outboxSignal = new OutboxSignal(redis, config.REDIS_PREFIX, logger);
  const jobs = new JobProducers(redis, config.REDIS_PREFIX, logger);

  const orgs = new OrgService(data);
  const policies = new PolicyService(data);
  const approvals = new ApprovalService(
    data,
    policies,
    { settlements, outboxSignal, jobs, logger },
    {
      freeTierMonthlyApprovals: config.FREE_TIER_MONTHLY_APPROVALS,
      orphanTimeoutSeconds: config.ORPHAN_TIMEOUT_SECONDS,
    },
  );
  const webhooks = new WebhookService(db, { jobs, logger }, { allowPrivateUrls: allowsPrivateWebhookUrls(config) });
  const audit = new AuditService(data, { jobs, logger }, { databaseUrl: config.DATABASE_URL, exportDir: config.EXPORT_DIR });

  return {
    config,
    logger,
    db,
    sql,
    redis,
    settlements,
    outboxSignal,
    jobs,
    orgs,
    policies,
    approvals,
    webhooks,
    audit,
    async checkReadiness() {
      const [postgres, redisUp] = await Promise.all([
        db.$queryRaw`SELECT 1`.then(
          () => true,
          () => false,
        ),
        redis.ping().then(
          (reply) => reply === 'PONG',
          () => false,
        ),
      ]);
      return { postgres, redis: redisUp };
    },
    async close() {
      settlements.close();
      await withTimeout(jobs.close(), 1000, 'closing queues').catch(() => {});
      await Promise.allSettled([data.close(), closeRedis(redis), closeRedis(subscriber)]);
    },
  };
}
