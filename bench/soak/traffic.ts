// The soak's clients: creations, long-polls and decisions through the proxy, at a steady pace,
// each answer counted by operation and status. A client retries what the API guide says is safe to
// retry (503, a 5xx, a dropped connection) with the same idempotency key; only an answer it got
// counts as acknowledged.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { requestJson, type JsonResponse } from '../lib/http.js';

export type Operation = 'create' | 'long-poll' | 'decide';

/** What the clients were told: approvals created (and how), decisions recorded. */
export interface Acknowledged {
  created: Map<string, 'pending' | 'approved'>;
  decided: Map<string, 'approved' | 'rejected'>;
}

/** A request that got no answer within its timeout: when it was sent, and on which connection. */
export interface Unanswered {
  operation: Operation;
  sentAt: number;
  timeoutMs: number;
  localPort: number | undefined;
}

export interface TrafficOptions {
  port: number;
  key: string;
  reviewerKey: string;
  policyKey: string;
  creationsPerSecond: number;
  longPollers: number;
}

const RETRIES = 20;
const RETRY_PAUSE_MS = 500;
/** How long a pending approval is left to its long-polls before a reviewer decides it. */
const DECISION_DELAY_MS = 2_000;

/** A long-poll that was answered: on which approval, when it went out and came back, and the status it got. */
export interface LongPoll {
  id: string;
  sentAt: number;
  answeredAt: number;
  status: string | undefined;
}

export class Traffic {
  readonly statuses = new Map<Operation, Map<string, number>>();
  readonly longPolls: LongPoll[] = [];
  /** Every 5xx answer, with when it came. */
  readonly serverErrors: { operation: Operation; at: number; status: number }[] = [];
  readonly acknowledged: Acknowledged = { created: new Map(), decided: new Map() };
  /** Requests given up on after every retry failed. */
  abandoned = 0;
  readonly unanswered: Unanswered[] = [];
  private readonly pending: { id: string; at: number }[] = [];
  private running = true;
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly options: TrafficOptions) {}

  start(): void {
    this.loops.push(this.createLoop(), this.decideLoop());
    for (let i = 0; i < this.options.longPollers; i++) this.loops.push(this.longPollLoop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private count(operation: Operation, status: string): void {
    const byStatus = this.statuses.get(operation) ?? new Map<string, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    this.statuses.set(operation, byStatus);
  }

  /** One request, counted by its status, or by why there was none. */
  private async send(operation: Operation, request: Parameters<typeof requestJson>[0]): Promise<JsonResponse | null> {
    const sentAt = Date.now();
    try {
      const response = await requestJson(request);
      this.count(operation, String(response.status));
      if (response.status >= 500) this.serverErrors.push({ operation, at: Date.now(), status: response.status });
      return response;
    } catch (error) {
      // No answer: the connection was refused or reset, or the answer took longer than the timeout.
      const code = (error as NodeJS.ErrnoException).code ?? (String(error).includes('timed out') ? 'timeout' : 'error');
      if (code === 'timeout') {
        const { localPort } = error as { localPort?: number };
        this.unanswered.push({ operation, sentAt, timeoutMs: request.timeoutMs!, localPort });
      }
      this.count(operation, `no answer: ${code}`);
      return null;
    }
  }

  /** Sends until an answer that is not worth retrying; null when every retry failed. */
  private async sendRetrying(operation: Operation, request: Parameters<typeof requestJson>[0]): Promise<JsonResponse | null> {
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const response = await this.send(operation, request);
      if (response && response.status < 500) return response;
      await sleep(RETRY_PAUSE_MS);
    }
    this.abandoned++;
    return null;
  }

  private async createLoop(): Promise<void> {
    const intervalMs = 1000 / this.options.creationsPerSecond;
    const inFlight = new Set<Promise<void>>();
    for (let next = Date.now(); this.running; next += intervalMs) {
      await sleep(Math.max(0, next - Date.now()));
      const creation = this.createOne().finally(() => inFlight.delete(creation));
      inFlight.add(creation);
    }
    await Promise.all(inFlight);
  }

  private async createOne(): Promise<void> {
    // Half are allowed by the policy at once, half wait for a reviewer.
    const amount = Math.floor(Math.random() * 20);
    const body = { policyKey: this.options.policyKey, action: 'soak.refund', payload: { amount }, idempotencyKey: randomUUID() };
    const { port, key } = this.options;
    const response = await this.sendRetrying('create', { port, method: 'POST', path: '/v1/approvals', key, body, timeoutMs: 15_000 });
    if (!response || (response.status !== 200 && response.status !== 201)) return;
    const { id, status } = response.body as { id: string; status: 'pending' | 'approved' };
    this.acknowledged.created.set(id, status);
    if (status === 'pending') this.pending.push({ id, at: Date.now() });
  }

  private async decideLoop(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    while (this.running || this.pending.length > 0) {
      const oldest = this.pending[0];
      if (!oldest || inFlight.size >= 8 || (this.running && Date.now() - oldest.at < DECISION_DELAY_MS)) {
        await sleep(20);
        continue;
      }
      this.pending.shift();
      const decision = this.decide(oldest.id).finally(() => inFlight.delete(decision));
      inFlight.add(decision);
    }
    await Promise.all(inFlight);
  }

  private async decide(id: string): Promise<void> {
    const verdict = Math.random() < 0.5 ? 'approved' : 'rejected';
    const { port, reviewerKey } = this.options;
    const path = `/v1/approvals/${id}/decision`;
    const response = await this.sendRetrying('decide', {
      port,
      method: 'POST',
      path,
      key: reviewerKey,
      body: { verdict },
      timeoutMs: 15_000,
    });
    if (response?.status === 200) this.acknowledged.decided.set(id, verdict);
  }

  private async longPollLoop(): Promise<void> {
    while (this.running) {
      const id = this.pending.at(Math.floor(Math.random() * this.pending.length))?.id;
      if (!id) {
        await sleep(100);
        continue;
      }
      const { port, key } = this.options;
      const sentAt = Date.now();
      const response = await this.send('long-poll', { port, method: 'GET', path: `/v1/approvals/${id}?wait=5`, key, timeoutMs: 20_000 });
      if (response?.status === 200) {
        this.longPolls.push({ id, sentAt, answeredAt: Date.now(), status: (response.body as { status?: string }).status });
      }
      if (!response || response.status >= 500) await sleep(RETRY_PAUSE_MS);
    }
  }
}
