import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets from a millisecond to the 30 s of the longest long-poll. */
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The process's Prometheus series (see docs/operations.md), on its own registry so that several app
 * instances in one test process do not collide. Domain code counts what happened through these;
 * the gauges that mirror state elsewhere (queue depths, outbox lag) are read on each scrape by
 * the collectors registered with `onScrape`.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'approval_gate_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'approval_gate_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly approvalsCreated = new Counter({
    name: 'approval_gate_approvals_created_total',
    help: 'Approvals created, by how creation left them: approved (the policy allowed), pending, orphaned.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly decisions = new Counter({
    name: 'approval_gate_decisions_total',
    help: 'Votes cast, by channel (api, console, email, slack), verdict and whether they settled the approval.',
    labelNames: ['channel', 'verdict', 'settled'] as const,
    registers: [this.registry],
  });

  readonly jobs = new Counter({
    name: 'approval_gate_jobs_total',
    help: 'Jobs run by this worker process, by queue and result (completed, failed).',
    labelNames: ['queue', 'result'] as const,
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: 'approval_gate_queue_jobs',
    help: 'Jobs in each queue by state, read from Redis when scraped.',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'approval_gate_webhook_attempts_total',
    help: 'Webhook delivery attempts, by how they ended (succeeded, retry, failed, endpoint-disabled).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookDuration = new Histogram({
    name: 'approval_gate_webhook_attempt_duration_seconds',
    help: 'Time from sending a webhook attempt to its answer (or its failure).',
    labelNames: ['result'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly outboxLag = new Gauge({
    name: 'approval_gate_outbox_lag_seconds',
    help: 'Age of the oldest domain event not yet handed to its consumers, read from PostgreSQL when scraped.',
    registers: [this.registry],
  });

  readonly expiryLateness = new Histogram({
    name: 'approval_gate_expiry_lateness_seconds',
    help: 'How long after its deadline a pending approval was expired or escalated.',
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly writeBatchSize = new Histogram({
    name: 'approval_gate_write_batch_size',
    help: 'Creations or votes written by one statement and one commit (the group commit), by operation.',
    labelNames: ['operation'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [this.registry],
  });

  readonly writeBatchSeconds = new Histogram({
    name: 'approval_gate_write_batch_seconds',
    help: 'How long one group-commit statement ran, from its start to its answer, by operation. The rate of its sum is how many run at once on average: near WRITE_BATCH_IN_FLIGHT, every write waits its turn.',
    labelNames: ['operation'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly longPollWaiters = new Gauge({
    name: 'approval_gate_long_poll_waiters',
    help: 'Requests of this web process waiting on an approval (GET /v1/approvals/:id?wait=).',
    registers: [this.registry],
  });

  constructor(role: string) {
    this.registry.setDefaultLabels({ process: role });
    collectDefaultMetrics({ register: this.registry });
  }

  private readonly collectors: (() => Promise<void>)[] = [];

  /** Runs `collect` before each scrape; a failing collector leaves its series as they were. */
  onScrape(collect: () => Promise<void>): void {
    this.collectors.push(collect);
  }

  /** The Prometheus text exposition, after the scrape-time collectors ran. */
  async exposition(): Promise<string> {
    await Promise.allSettled(this.collectors.map((collect) => collect()));
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
