/**
 * `@approval-gate/client`: what an agent's code needs to ask before it acts. Built on the console's
 * typed client (`api-client.ts`), with the retries a long wait needs. Its types are inferred from
 * the server's zod schemas (`approval-types.ts`), and its declarations reach no further than those.
 */
import { createApiClient } from './api-client.js';
import { retryingFetch, type RetryOptions } from './retrying-fetch.js';
import { ReceiptError, verifyReceipt } from './receipts.js';
import type { ApprovalCreateInput, ApprovalList, ApprovalListQuery, ApprovalView, DecisionInput, RevisionInput } from './approval-types.js';

export { ApiError } from './api-error.js';
export { assertApproved, ReceiptError, verifyReceipt, type PublishedKey, type ReceiptKeysInput } from './receipts.js';
export type { RetryEvent, RetryOptions } from './retrying-fetch.js';
export type * from './approval-types.js';
export {
  verifyWebhook,
  WebhookVerificationError,
  type VerifyWebhookInput,
  type WebhookEventBody,
  type WebhookHeadersLike,
  type WebhookVerificationFailure,
} from '../modules/webhooks/verify-webhook.js';

/** The most seconds the API holds one read open (`GET /v1/approvals/:id?wait=`). */
export const MAX_WAIT_PER_READ_SECONDS = 30;

export interface ApprovalGateClientOptions {
  /** Where the service is, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`agk_…`) with the scopes the calls need: `approvals:write`, `approvals:read`, `approvals:decide`. */
  apiKey: string;
  /** How reads and creations are retried through dropped connections, restarts and 503s. */
  retry?: RetryOptions;
  fetch?: typeof fetch;
}

export interface RequestApprovalOptions {
  /**
   * Seconds to wait for a decision, in reads of at most 30 s each. Default 300; 0 creates and
   * returns at once. Past it, the request is returned as it is then: still `pending`.
   */
  wait?: number;
  /** Ends the wait early: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Told before each read that waits, with the request as it is then: to report progress. */
  onWait?: (approval: ApprovalView) => void;
}

/** The payload a request for changes asked about, revised; or null to stop and return the request for changes. */
export type ChangesRequestedHandler = (
  feedback: string,
  suggestedPayload: Record<string, unknown> | null,
  approval: ApprovalView,
) => Record<string, unknown> | null | Promise<Record<string, unknown> | null>;

export interface RequestApprovalLoopOptions extends RequestApprovalOptions {
  /**
   * Called when a reviewer asks for changes, with their feedback and the payload they suggest (or
   * null): its answer is sent as the next revision and waited for in turn, until the request is
   * approved or rejected (or `wait` runs out). Answering null stops there: the request is returned
   * as it is, `changes_requested`. Without it, a request for changes is returned at once.
   */
  onChangesRequested?: ChangesRequestedHandler;
}

export interface ReviseOptions {
  /** Reviewer-facing context for the revision; kept as it was when left out. */
  context?: RevisionInput['context'];
  /** What changed, for the reviewers. */
  note?: string;
  /** Made here when not given, so that retries through a dropped connection make one revision. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ApprovalGateClient {
  /**
   * Creates an approval request and waits until it is settled or `wait` runs out. The creation
   * carries an idempotency key (`input.idempotencyKey`, or one made here), so that the retries
   * through a dropped connection, a restarting web process or a 503 make one request, not several.
   * An `escalated` request is followed to its successor: what is returned is the last request of
   * the chain (its `escalatedFrom` says it is a successor). When approved, its `payload` is what to
   * execute: a reviewer may have edited it. A settled request's `receipt` is verified against the
   * service's published keys (GET /v1/audit/keys) before it is returned, and a receipt that does
   * not verify throws a ReceiptError; pass the payload to `assertApproved` with it before executing.
   */
  requestApproval(input: ApprovalCreateInput, options?: RequestApprovalLoopOptions): Promise<ApprovalView>;
  /**
   * Answers a request for changes with a revised payload: the same approval, pending again (or
   * settled at once when its policy decides the new payload). Only the principal that created the
   * request may revise it. Returns at once; `waitForDecision` waits for the reviewers.
   */
  revise(id: string, revision: { payload: Record<string, unknown> } & ReviseOptions): Promise<ApprovalView>;
  /**
   * Waits, in reads of at most 30 s, until the approval is no longer pending or `wait` (default
   * 300 s) runs out, following an escalation to its successor.
   */
  waitForDecision(approval: ApprovalView, options?: RequestApprovalOptions): Promise<ApprovalView>;
  /** Reads an approval; with `wait` (1–30 s) the API holds the read while it is pending. */
  getApproval(id: string, options?: { wait?: number; signal?: AbortSignal }): Promise<ApprovalView>;
  listApprovals(query?: ApprovalListQuery): Promise<ApprovalList>;
  /**
   * Approves or rejects, as a reviewer's key (the key that created a request may not decide it).
   * Sent once, never retried: a retry of a decision that did land would be refused as a conflict.
   */
  decide(id: string, decision: DecisionInput): Promise<ApprovalView>;
}

export function createApprovalGateClient({
  baseUrl,
  apiKey,
  retry,
  fetch: fetchImpl = globalThis.fetch.bind(globalThis),
}: ApprovalGateClientOptions): ApprovalGateClient {
  const base = baseUrl.replace(/\/+$/, '');
  const retrying = createApiClient({ baseUrl: base, apiKey, fetch: retryingFetch(fetchImpl, retry) });
  const once = createApiClient({ baseUrl: base, apiKey, fetch: fetchImpl });

  const getApproval: ApprovalGateClient['getApproval'] = (id, options) => retrying.approvals.get(id, options);

  /** A settled request's receipt, checked against the keys the service publishes now. */
  async function checkReceipt(approval: ApprovalView): Promise<ApprovalView> {
    if (!approval.receipt) return approval;
    const { receipt, signature } = approval.receipt;
    if (receipt.approvalId !== approval.id || receipt.status !== approval.status || receipt.payloadHash !== approval.payloadHash)
      throw new ReceiptError('the receipt is not the settlement of this request as read');
    if (!verifyReceipt(receipt, signature, await retrying.audit.keys()))
      throw new ReceiptError('its signature does not verify against the published keys');
    return approval;
  }

  const revise: ApprovalGateClient['revise'] = (id, { payload, context, note, idempotencyKey, signal }) =>
    retrying.approvals.revise(
      id,
      {
        payload,
        ...(context !== undefined ? { context } : {}),
        ...(note !== undefined ? { note } : {}),
        idempotencyKey: idempotencyKey ?? globalThis.crypto.randomUUID(),
      },
      { signal },
    );

  /** Waits until `deadline` (epoch ms) at most; see `waitForDecision`. */
  async function waitUntil(approval: ApprovalView, deadline: number, { signal, onWait }: RequestApprovalOptions): Promise<ApprovalView> {
    for (;;) {
      const successor = approval.status === 'escalated' ? approval.escalatedTo : undefined;
      if (approval.status !== 'pending' && successor === undefined) return approval;
      const seconds = Math.min(MAX_WAIT_PER_READ_SECONDS, Math.round((deadline - Date.now()) / 1000));
      if (seconds < 1) return successor === undefined ? approval : await getApproval(successor, { signal });
      onWait?.(approval);
      approval = await getApproval(successor ?? approval.id, { wait: seconds, signal });
    }
  }

  return {
    getApproval,
    listApprovals: (query) => retrying.approvals.list(query),
    decide: (id, decision) => once.approvals.decide(id, decision),
    revise,

    waitForDecision(approval, options = {}) {
      const wait = options.wait ?? 300;
      if (!(wait >= 0)) throw new RangeError(`wait must be a number of seconds, 0 or more; got ${wait}`);
      return waitUntil(approval, Date.now() + wait * 1000, options);
    },

    async requestApproval(input, { wait = 300, onChangesRequested, ...options } = {}) {
      if (!(wait >= 0)) throw new RangeError(`wait must be a number of seconds, 0 or more; got ${wait}`);
      const deadline = Date.now() + wait * 1000;
      const idempotencyKey = input.idempotencyKey ?? globalThis.crypto.randomUUID();
      let approval = await waitUntil(await retrying.approvals.create({ ...input, idempotencyKey }, options), deadline, options);
      while (approval.status === 'changes_requested' && onChangesRequested) {
        const payload = await onChangesRequested(approval.feedback ?? '', approval.suggestedPayload ?? null, approval);
        if (payload === null) return checkReceipt(approval);
        // One key per revision, from the creation's: a retry of this revision makes no second one.
        const revised = await revise(approval.id, {
          payload,
          idempotencyKey: `${idempotencyKey}:revision:${approval.revision + 1}`,
          ...options,
        });
        approval = await waitUntil(revised, deadline, options);
      }
      return checkReceipt(approval);
    },
  };
}
