import { z } from 'zod';
import { defineJob, type JobDefinition, type JobOptions } from '../jobs/job.js';
import { deferOrRethrow, isLastAttempt, RetryLater } from '../lib/job-retries.js';
import type { Config } from '../config.js';
import type { DomainEventType } from '../modules/audit/audit-events.js';
import type { DomainEvent } from '../modules/outbox/domain-events.js';
import type { Services } from '../services.js';

/**
 * Something that acts on committed domain events: delivers webhooks, mails admins, posts to
 * Slack. The outbox relay hands every event to each consumer subscribed to its type, so adding a
 * consumer is one folder and one line in registry.ts, and no other consumer changes.
 */
export interface EventConsumer<Payload = unknown> {
  name: string;
  events: readonly DomainEventType[];
  /** A finer filter, applied by the relay: events it refuses make no work for this consumer. */
  accepts?: (event: DomainEvent, config: Config) => boolean;
  /**
   * The queue the consumer's work runs on. A consumer without one does all its work in `plan`
   * (a broadcast, whose receivers can catch up from the audit chain themselves).
   */
  job?: JobDefinition<Payload>;
  /**
   * Writes the durable work these events make for the consumer and returns the jobs to enqueue.
   * The relay calls it before it marks the events relayed, so work whose job Redis lost is still
   * in PostgreSQL. It must be idempotent: after a relay crash it runs again for the same events.
   */
  plan(events: readonly DomainEvent[], services: Services): Promise<Payload[]>;
}

export interface EventTaskPayload {
  eventId: string;
}

export interface EventHandlerSpec {
  name: string;
  events: readonly DomainEventType[];
  accepts?: (event: DomainEvent, config: Config) => boolean;
  options: JobOptions;
  /**
   * Acts on one event; throwing retries it with the options' backoff, throwing RetryLater runs it
   * again after the wait it names, without counting an attempt. Built once per worker.
   */
  handle: (services: Services) => (event: DomainEvent) => Promise<unknown>;
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
  const job = defineJob<EventTaskPayload>({
    queue: spec.name,
    payload: z.object({ eventId: z.uuid() }),
    options: spec.options,
    jobId: ({ eventId }) => `${spec.name}.${eventId}`,
    processor: (services) => {
      const handle = spec.handle(services);
      const tasks = services.consumerTasks;
      return async ({ eventId }, bullJob, token) => {
        if (!(await tasks.begin(eventId, spec.name))) return { skipped: 'task is no longer pending' };
        try {
          const [event] = await services.outbox.load([eventId]);
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
  });
  return {
    name: spec.name,
    events: spec.events,
    ...(spec.accepts ? { accepts: spec.accepts } : {}),
    handle: spec.handle,
    job,
    async plan(events, services) {
      const pending = await services.consumerTasks.create(spec.name, events);
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
