import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database, Sql } from '../data/database.js';
import { defineJob, type JobDefinition, type JobHandler, type JobOptions } from '../jobs/job.js';
import { deferOrRethrow, isLastAttempt, RetryLater } from '../lib/job-retries.js';
import type { Logger } from '../lib/logger.js';
import type { Mailer } from '../lib/mailer.js';
import type { ApprovalFeed } from '../modules/approvals/approval-feed.js';
import type { ApprovalService } from '../modules/approvals/approval-service.js';
import type { CheckpointService } from '../modules/audit/checkpoint-service.js';
import type { DomainEventType } from '../modules/audit/audit-events.js';
import type { DecisionLinkService } from '../modules/links/decision-link-service.js';
import type { MemberService } from '../modules/members/member-service.js';
import type { NotificationStore } from '../modules/notifications/notification-store.js';
import type { DomainEvent } from '../modules/outbox/domain-events.js';
import type { OutboxStore } from '../modules/outbox/outbox-store.js';
import type { SlackRateLimiter } from '../modules/slack/slack-rate-limiter.js';
import type { SlackService } from '../modules/slack/slack-service.js';
import type { TeamsService } from '../modules/teams/teams-service.js';
import type { PushService } from '../modules/push/push-service.js';
import type { DeliveryService } from '../modules/webhooks/delivery-service.js';
import type { ConsumerTaskStore } from './consumer-task-store.js';

/**
 * What consumers act with: the domain services and the plumbing their work reaches. The worker
 * hands it over; the composition root's Services is one, and more.
 */
export interface ConsumerContext {
  config: Config;
  logger: Logger;
  db: Database;
  sql: Sql;
  mailer: Mailer;
  outbox: OutboxStore;
  consumerTasks: ConsumerTaskStore;
  approvals: ApprovalService;
  approvalFeed: ApprovalFeed;
  /** Who was told about which approval on which channel (contract C11). */
  notifications: NotificationStore;
  decisionLinks: DecisionLinkService;
  members: MemberService;
  deliveries: DeliveryService;
  checkpoints: CheckpointService;
  slack: SlackService;
  slackRateLimiter: SlackRateLimiter;
  teams: TeamsService;
  push: PushService;
}

/** What the relay asks of a consumer: the events it takes, and the durable work they make. */
export interface EventSubscriber<Payload> {
  name: string;
  events: readonly DomainEventType[];
  /** A finer filter, applied by the relay: events it refuses make no work for this consumer. */
  accepts?: (event: DomainEvent, config: Config) => boolean;
  /**
   * Writes the durable work these events make for the consumer and returns the jobs to enqueue.
   * The relay calls it before it marks the events relayed, so work whose job Redis lost is still
   * in PostgreSQL. It must be idempotent: after a relay crash it runs again for the same events.
   */
  plan(events: readonly DomainEvent[], context: ConsumerContext): Promise<Payload[]>;
}

/**
 * Something that acts on committed domain events: delivers webhooks, mails admins, posts to
 * Slack. The outbox relay hands every event to each consumer subscribed to its type, so adding a
 * consumer is one folder and one line in registry.ts, and no other consumer changes. Its work runs
 * on a queue of its own (`job`), and `processor` is what runs a job of it, in the worker; a
 * consumer without a queue does all its work in `plan` (a broadcast, whose receivers can catch up
 * from the audit chain themselves).
 */
export type EventConsumer<Payload = unknown> = EventSubscriber<Payload> &
  (
    | { job: JobDefinition<Payload>; processor: (context: ConsumerContext) => JobHandler<Payload> }
    | { job?: undefined; processor?: undefined }
  );

export interface EventTaskPayload {
  eventId: string;
}

export interface EventHandlerSpec {
  name: string;
  events: readonly DomainEventType[];
  accepts?: (event: DomainEvent, config: Config) => boolean;
  /**
   * Of these organizations, those in which the consumer can have work at all (a Slack workspace
   * connected, a member to mail): events of the others make no task and no job. Asked once per
   * relayed batch, so an organization that connects later is served from its next event on.
   */
  servedOrgs?: (orgIds: readonly string[], context: ConsumerContext) => Promise<ReadonlySet<string>>;
  options: JobOptions;
  /**
   * Acts on one event; throwing retries it with the options' backoff, throwing RetryLater runs it
   * again after the wait it names, without counting an attempt. Built once per worker.
   */
  handle: (context: ConsumerContext) => (event: DomainEvent) => Promise<unknown>;
}

/**
 * The usual consumer: one job per event, whose durable state is its row in consumer_tasks
 * (pending until the handler returns, failed after the last attempt), swept by
 * resumeStalledTasks when Redis loses the job. Delivery is at least once: a worker that dies after
 * the handler acted and before the row is marked done runs it again.
 */
export function defineEventHandler(
  spec: EventHandlerSpec,
): EventConsumer<EventTaskPayload> & Pick<EventHandlerSpec, 'handle'> & { job: JobDefinition<EventTaskPayload> } {
  return {
    name: spec.name,
    events: spec.events,
    ...(spec.accepts ? { accepts: spec.accepts } : {}),
    handle: spec.handle,
    job: defineJob<EventTaskPayload>({
      queue: spec.name,
      payload: z.object({ eventId: z.uuid() }),
      options: spec.options,
      jobId: ({ eventId }) => `${spec.name}.${eventId}`,
    }),
    processor: (context) => {
      const handle = spec.handle(context);
      const tasks = context.consumerTasks;
      return async ({ eventId }, bullJob, token) => {
        if (!(await tasks.begin(eventId, spec.name))) return { skipped: 'task is no longer pending' };
        try {
          const [event] = await context.outbox.load([eventId]);
          const result = event ? await handle(event) : { skipped: 'event no longer exists' };
          await tasks.complete(eventId, spec.name);
          return result;
        } catch (error) {
          if (error instanceof RetryLater) return deferOrRethrow(error, bullJob, token);
          if (isLastAttempt(bullJob)) await tasks.fail(eventId, spec.name, error instanceof Error ? error.message : String(error));
          throw error;
        }
      };
    },
    async plan(events, context) {
      const served = spec.servedOrgs ? await spec.servedOrgs([...new Set(events.map((event) => event.orgId))], context) : null;
      const worked = served ? events.filter((event) => served.has(event.orgId)) : events;
      if (worked.length === 0) return [];
      const pending = await context.consumerTasks.create(spec.name, worked);
      return pending.map((eventId) => ({ eventId }));
    },
  };
}

/** The events of a batch that this consumer takes: its types, then its own filter. */
export function eventsFor(
  consumer: Pick<EventConsumer, 'events' | 'accepts'>,
  events: readonly DomainEvent[],
  config: Config,
): DomainEvent[] {
  return events.filter((event) => consumer.events.includes(event.type) && (consumer.accepts?.(event, config) ?? true));
}
