import type { DataLayer } from '../../data/database.js';
import type { Reads } from '../../data/read-replica.js';
import {
  ConflictError,
  DecisionRefusedError,
  ForbiddenError,
  NotFoundError,
  PaymentRequiredError,
  ValidationError,
} from '../../lib/errors.js';
import { principalKey, type MemberRole, type Tenant } from '../orgs/tenant.js';
import { MAX_STAGES, type DecisionChannel } from '../policies/policy-schemas.js';
import { evaluatePolicy } from '../policies/policy-rules.js';
import type { PolicyService } from '../policies/policy-service.js';
import {
  MAX_REVISIONS,
  type ApprovalCreateInput,
  type ApprovalListQuery,
  type ApprovalView,
  type Decider,
  type DecisionInput,
  type RevisionInput,
} from './approval-schemas.js';
import type { GroupCommitOptions } from '../../lib/group-commit.js';
import type { Metrics } from '../../lib/metrics.js';
import { ApprovalWrites } from './approval-writes.js';
import { StandingApprovalStore, type StandingGrant } from './standing-approval-store.js';
import type { StandingApprovalView } from './standing-approval-schemas.js';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OutboxSignal } from '../outbox/outbox-signal.js';
import type { Caller } from '../../lib/caller.js';
import type { ApprovalSettlements } from './approval-settlements.js';
import { ApprovalLookups, ApprovalStore, type CreateOutcome, type ListedApproval, type MonthlyQuota } from './approval-store.js';
import type {
  Approval,
  ApprovalRecord,
  Creation,
  DecisionRefusal,
  Delegator,
  RevisionRecord,
  Settling,
  VoteOutcome,
  VoterRecord,
} from './approval-types.js';
import type { Actor } from '../audit/audit-events.js';
import type { ReceiptKeys, ReceiptSigner, SignedReceipt } from '../audit/receipt-signing.js';
import { decisionOf, receiptOf } from './approval-receipts.js';
import {
  applySettlement,
  createApproval,
  currentPayloadHash,
  currentStage,
  stagesOf,
  reviseApproval,
  timeOutApproval,
  voteOn,
  type Governing,
} from './approval-transitions.js';
import { decodeListCursor, encodeListCursor } from './list-cursor.js';
import { attributeCommand } from '../orgs/api-keys.js';
import type { ChangedFields } from './payload-changes.js';

/** The statuses whose deadline runs: a request waiting for changes expires as a pending one does. */
const DEADLINE_RUNS: ReadonlySet<Approval['status']> = new Set(['pending', 'changes_requested']);

/** Policy writes racing one creation this often mean something is wrong, not busy. */
const MAX_POLICY_RACES = 5;

/** When the database says a deadline is not reached yet although this process's clock says it is. */
const CLOCK_SKEW_RETRY_MS = 100;

export interface ApprovalLimits {
  freeTierMonthlyApprovals: number;
  orphanTimeoutSeconds: number;
  /** The group commit of creations and votes (see ApprovalWrites). */
  writeBatch: GroupCommitOptions;
}

/**
 * What runs after a commit: wake-ups in Redis, none of which is needed for correctness, and
 * metrics. The API's answers do not wait for the wake-ups (they run as background work).
 */
export interface AfterCommit {
  settlements: ApprovalSettlements;
  outboxSignal: OutboxSignal;
  metrics: Metrics;
}

export type TimeoutOutcome =
  | { kind: 'settled'; status: Approval['status']; successorId: string | null }
  | { kind: 'not_due'; retryAt: Date }
  | { kind: 'not_pending' };

/**
 * Who casts a vote and through which channel (see docs/policies.md): an API key through `api`, a member
 * through the console, an email link or Slack. A member's role is the one read for this request.
 * The database counts the vote as the principal's (a key's owner, see ag_principal_of), whatever
 * credential cast it.
 */
export interface Voter {
  actor: Extract<Actor, { type: 'api_key' | 'user' }>;
  role?: MemberRole;
  channel: DecisionChannel;
}

/** The voter a caller of the API is: its key (named with its owner), or the member of its console session. */
export function voterOf(tenant: Tenant): Voter {
  const { principal } = tenant;
  return principal.type === 'session'
    ? { actor: { type: 'user', id: principal.memberId, email: principal.email }, role: principal.role, channel: 'console' }
    : { actor: { type: 'api_key', id: principal.keyId, ...(principal.owner ? { owner: principal.owner } : {}) }, channel: 'api' };
}

function voterRecord({ actor, role }: Voter): VoterRecord {
  return actor.type === 'user'
    ? { type: 'user', id: actor.id, email: actor.email, role: role ?? 'viewer' }
    : { type: 'api_key', id: actor.id };
}

/** What each refusal tells the voter to do. */
const REFUSALS: Record<DecisionRefusal, (approval: Approval, voter: Voter) => string> = {
  channel_not_allowed: (approval, voter) =>
    `The policy of this request does not allow decisions through ${voter.channel}; decide it through ${approval.channels.join(' or ')}.`,
  not_a_reviewer: (approval) => {
    const stage = currentStage(approval);
    return stage
      ? `This request is in stage ${stage.index} of ${stagesOf(approval)!.length} ('${stage.name}') of the policy '${approval.policyKey}', ` +
          "and you are not among that stage's reviewers: the stage's reviewers decide it now, and each stage's in turn."
      : `You are not among the reviewers the policy '${approval.policyKey}' names; ask one of them, or an admin to add you to the policy's reviewers.`;
  },
  self_approval: () =>
    'You asked for this request (or it acts on your behalf), and its policy does not allow self-approval: another reviewer must decide it.',
  key_unattributed: (approval, { actor }) => {
    // A key made by a key whose owner is unknown is attributed through the key that made it.
    const key = actor.type === 'api_key' && actor.owner?.type === 'key' ? actor.owner.id : actor.id;
    return (
      `Nobody knows whose API key ${key} is (it was made before keys had owners${key === actor.id ? '' : ', and made the key you used'}), ` +
      `so it votes for nobody. An operator gives it its owner with \`npm run cli -- ${attributeCommand(approval.orgId, key)}\` ` +
      '(docs/members-and-channels.md#keys-made-before-owners); until then, decide with a key of your own or in the console.'
    );
  },
  requester_unattributed: (approval) => {
    const key = (approval.requestedBy as { id: string }).id;
    return (
      `This request was made with API key ${key}, and nobody knows whose that key is (it, or the key that made it, dates from before ` +
      `keys had owners): nobody can be told apart from its maker, and the policy '${approval.policyKey}' does not allow self-approval. ` +
      `An operator gives the key its owner with \`npm run cli -- ${attributeCommand(approval.orgId, key)}\` ` +
      '(docs/members-and-channels.md#keys-made-before-owners); then the request can be decided.'
    );
  },
};

export interface CreatedApproval {
  /** True when this call made the record (or the revision); false for an idempotent replay. */
  created: boolean;
  approval: ApprovalView;
}

export class ApprovalService {
  private readonly writes: ApprovalWrites;
  private readonly lookups: ApprovalLookups;
  private readonly standing: StandingApprovalStore;

  constructor(
    private readonly data: Pick<DataLayer, 'db' | 'sql'> & { reads: Reads },
    private readonly policies: PolicyService,
    private readonly afterCommit: AfterCommit,
    private readonly limits: ApprovalLimits,
    private readonly receipts: ReceiptKeys,
  ) {
    this.lookups = new ApprovalLookups(data.sql);
    this.standing = new StandingApprovalStore(data.sql, data.db);
    this.writes = new ApprovalWrites(data.sql, {
      ...limits.writeBatch,
      onBatch: (operation, { size, seconds }) => {
        afterCommit.metrics.writeBatchSize.observe({ operation }, size);
        afterCommit.metrics.writeBatchSeconds.observe({ operation }, seconds);
      },
    });
  }

  private store(tenant: Tenant): ApprovalStore {
    return new ApprovalStore(this.data.db, this.data.sql, tenant.orgId);
  }

  private quota(tenant: Tenant, now: Date): MonthlyQuota | null {
    if (tenant.plan !== 'free') return null;
    return { limit: this.limits.freeTierMonthlyApprovals, month: now.toISOString().slice(0, 7) };
  }

  /**
   * The free-tier check that runs before the body is validated (402 comes before
   * 422; see docs/api.md). A replay of a known idempotency key is let through: it creates nothing.
   * Creation enforces the limit again atomically; this check only decides what to answer first.
   */
  async assertCreationAllowed(tenant: Tenant, idempotencyKey: unknown): Promise<void> {
    const quota = this.quota(tenant, new Date());
    if (!quota) return;
    const store = this.store(tenant);
    if ((await store.monthlyUsage(quota.month)) < quota.limit) return;
    if (typeof idempotencyKey === 'string' && (await store.findByIdempotencyKey(idempotencyKey))) return;
    throw monthlyLimitReached(quota);
  }

  /**
   * The policy a new request falls under, evaluated; an orphan when the key matches none. From
   * this process's snapshot unless `fresh`: the creating transaction rejects a stale revision.
   */
  private async govern(orgId: string, input: ApprovalCreateInput, fresh: boolean): Promise<Governing> {
    const { document, revision, version } = await this.policies.snapshot(orgId, input.policyKey, { fresh });
    if (!document) return { kind: 'orphan', timeoutSeconds: this.limits.orphanTimeoutSeconds, policyRevision: null, policyVersion: null };
    const request = { action: input.action, payload: input.payload, agent: input.agent ?? null, context: input.context ?? null };
    // The shadow is evaluated beside the policy, before the write, and decides nothing.
    const [verdict, shadow] = await Promise.all([
      evaluatePolicy(document, request, orgId),
      document.shadow ? evaluatePolicy(document.shadow, request, orgId) : null,
    ]);
    return {
      kind: 'policy',
      policy: document,
      verdict,
      shadow: shadow && { outcome: shadow.outcome, matchedRule: shadow.matchedRule },
      policyRevision: revision,
      policyVersion: version,
    };
  }

  /** Evaluates and inserts; evaluates again from a fresh read when the policy changed under it. */
  private async createUnderCurrentPolicy(
    store: ApprovalStore,
    orgId: string,
    input: ApprovalCreateInput,
    actor: Actor,
    quota: MonthlyQuota | null,
  ): Promise<{ creation: Creation; governing: Governing; outcome: Exclude<CreateOutcome, 'stale_policy'> }> {
    for (let attempt = 0; attempt < MAX_POLICY_RACES; attempt++) {
      const governing = await this.govern(orgId, input, attempt > 0);
      const creation = createApproval(input, governing, { actor, requester: actor }, new Date());
      const outcome = await this.writes.create(orgId, creation, quota);
      if (outcome !== 'stale_policy') return { creation, governing, outcome };
    }
    throw new Error(`policy '${input.policyKey}' kept changing while an approval was created under it`);
  }

  async create(tenant: Tenant, input: ApprovalCreateInput): Promise<CreatedApproval> {
    const store = this.store(tenant);
    const quota = this.quota(tenant, new Date());
    const { creation, governing, outcome } = await this.createUnderCurrentPolicy(store, tenant.orgId, input, tenant.actor, quota);
    const { approval } = creation;
    if (outcome === 'quota_exceeded') throw monthlyLimitReached(quota!);
    if (outcome === 'duplicate') {
      const existing = await store.findByIdempotencyKey(input.idempotencyKey!);
      return { created: false, approval: await this.view(existing!) };
    }
    this.announceCreation(creation);
    if (approval.status === 'pending' && governing.kind === 'policy' && governing.policy.standingApproval) {
      const approved = await this.approveByStanding(tenant.orgId, approval.id);
      if (approved) return { created: true, approval: await this.view(approved) };
    }
    const created = { ...approval, orgId: tenant.orgId };
    return { created: true, approval: approval.status === 'pending' ? await this.view(created) : await this.viewAsSettled(created) };
  }

  /**
   * Wakes the outbox relay. The expiry needs nothing here: the deadline watchers of the workers
   * find the approval's deadline in the database.
   */
  private announceCreation({ approval, events }: Creation): void {
    const { outboxSignal, metrics } = this.afterCommit;
    metrics.approvalsCreated.inc({ outcome: events.some((event) => event.type === 'approval.orphaned') ? 'orphaned' : approval.status });
    outboxSignal.notify();
  }

  /**
   * The requester's revision of an approval a reviewer asked to change (see docs/api.md#revisions):
   * evaluated by the policy again like a new request, and written by the database only while the
   * request for changes it answers is still open. Evaluated again from a fresh read when the policy
   * changed under it.
   */
  async revise(tenant: Tenant, id: string, input: RevisionInput): Promise<CreatedApproval> {
    const store = this.store(tenant);
    for (let attempt = 0; attempt < MAX_POLICY_RACES; attempt++) {
      const approval = await store.findById(id);
      if (!approval) throw new NotFoundError(`No approval with id '${id}' exists.`);
      const context = input.context === undefined ? approval.context : input.context;
      const governing = await this.govern(
        tenant.orgId,
        {
          action: approval.action,
          payload: input.payload,
          policyKey: approval.policyKey,
          agent: approval.agent,
          context: context as ApprovalCreateInput['context'],
        },
        attempt > 0,
      );
      const revising = reviseApproval(approval, input, governing, tenant.actor, new Date());
      const outcome = await store.revise(id, tenant.actor, revising, MAX_REVISIONS + 1);
      switch (outcome) {
        case 'stale_policy':
          continue;
        case 'not_found':
          throw new NotFoundError(`No approval with id '${id}' exists.`);
        case 'forbidden':
          throw new ForbiddenError('Only whoever created this request (the principal of the key that created it) may revise it.');
        case 'not_changes_requested':
          throw new ConflictError(
            `Approval ${id} is not waiting for changes (it is ${approval.status === 'changes_requested' ? 'past its deadline or revised already' : approval.status}); a revision answers a request for changes.`,
          );
        case 'limit_reached':
          throw new ConflictError(
            `Approval ${id} has had ${MAX_REVISIONS} revisions, the most one request may have; create a new request.`,
          );
        case 'duplicate':
          return { created: false, approval: await this.view((await store.findById(id))!) };
        case 'revised': {
          this.afterCommit.outboxSignal.notify();
          const revised = (await store.findById(id))!;
          if (revised.status !== 'pending') this.afterCommit.settlements.publish(id);
          return { created: true, approval: await this.view(revised) };
        }
      }
    }
    throw new Error(`policy of approval ${id} kept changing while it was revised`);
  }

  /** A page of the organization's approvals, newest first (see docs/api.md). */
  async list(tenant: Tenant, query: ApprovalListQuery): Promise<{ approvals: ApprovalView[]; nextCursor: string | null }> {
    const { status, cursor, ...filters } = query;
    const after = cursor === undefined ? undefined : decodeListCursor(cursor);
    if (after === null) throw new ValidationError([{ path: 'cursor', message: 'cursor is not one this API gave out' }]);
    const { decidable, include, ...exact } = filters;
    const voter = decidable ? voterOf(tenant) : undefined;
    // Listing may be a moment behind (a read replica), except for the caller's own recent writes.
    const reading = new ApprovalStore(this.data.db, await this.data.reads.sqlFor(principalKey(tenant.principal)), tenant.orgId);
    const rows = await reading.list({
      ...exact,
      ...(status ? { statuses: status } : {}),
      ...(after ? { after } : {}),
      ...(voter ? { decidableBy: { voter: voterRecord(voter), channel: voter.channel } } : {}),
      withCreatingKey: include === 'createdByKey',
    });
    const last = rows.length === query.limit ? rows[rows.length - 1] : undefined;
    const signer = await this.receipts.receiptSigner();
    const view = (row: ListedApproval): ApprovalView =>
      include === 'createdByKey' ? { ...toApprovalView(row, signer), createdByKey: creatingKey(row) } : toApprovalView(row, signer);
    return { approvals: rows.map(view), nextCursor: last ? encodeListCursor(last) : null };
  }

  /**
   * Reads an approval; with `waitSeconds`, holds while it is pending until it settles (in any
   * process), the wait runs out, or the caller goes away.
   */
  async get(tenant: Tenant, id: string, waitSeconds: number | undefined, caller: Caller): Promise<ApprovalView> {
    if (!waitSeconds) return this.view(await this.require(tenant.orgId, id));

    const watch = this.afterCommit.settlements.watch(id);
    try {
      const settled = await this.viewUnlessPending(tenant.orgId, id);
      if (settled) return settled;
      await watch.wait(waitSeconds * 1000, caller);
      return await this.view(await this.require(tenant.orgId, id));
    } finally {
      watch.release();
    }
  }

  /** Kept apart so a waiting request holds no copy of the row while it waits: 10,000 waiters add up. */
  private async viewUnlessPending(orgId: string, id: string): Promise<ApprovalView | null> {
    const approval = await this.require(orgId, id);
    return approval.status === 'pending' ? null : this.view(approval);
  }

  /**
   * Applies the timeout of a pending approval whose deadline has passed: `expired`, or
   * `escalated` with a successor under `escalateTo` created in the same transaction. Safe to
   * call repeatedly and concurrently (expiry jobs, sweeper, a racing decision): one call wins.
   * A deadline at most `waitUpToMs` away is waited for here, once the approval is read, so that an
   * expiry job started ahead of it settles at the deadline rather than a read later.
   */
  async timeOut(orgId: string, id: string, actor: Actor, waitUpToMs = 0): Promise<TimeoutOutcome> {
    const store = new ApprovalStore(this.data.db, this.data.sql, orgId);
    // Batched with the reads of the other expiries running in this process, as their writes are.
    const approval = await this.lookups.findById(orgId, id);
    if (!approval || !DEADLINE_RUNS.has(approval.status) || !approval.expiresAt) return { kind: 'not_pending' };
    let untilDue = approval.expiresAt.getTime() - Date.now();
    // Asked again when the deadline is that close.
    if (untilDue > waitUpToMs) return { kind: 'not_due', retryAt: new Date(approval.expiresAt.getTime() - waitUpToMs) };
    // A decision landing meanwhile wins: the settlement below applies only to a waiting approval.
    // A timer may fire a millisecond early, so the wait ends when this clock says so.
    while (untilDue > 0) {
      await sleep(untilDue);
      untilDue = approval.expiresAt.getTime() - Date.now();
    }
    const now = new Date();

    const successor = approval.onTimeout === 'escalate' && approval.escalateTo ? await this.successorOf(orgId, approval, actor, now) : null;
    const { settlement, events } = timeOutApproval(approval, actor, now, successor);
    const settled = successor
      ? await store.settleWithSuccessor(id, settlement, events, successor)
      : await this.writes.timeOut(orgId, id, settlement, events);
    if (!settled) {
      // Either another caller won, or the database clock has not reached the deadline yet.
      const current = await store.findById(id);
      return current && DEADLINE_RUNS.has(current.status)
        ? { kind: 'not_due', retryAt: new Date(Date.now() + CLOCK_SKEW_RETRY_MS) }
        : { kind: 'not_pending' };
    }

    this.afterCommit.metrics.expiryLateness.observe((now.getTime() - approval.expiresAt.getTime()) / 1000);
    this.afterCommit.settlements.publish(id);
    // The successor's announcement wakes the relay for both commits' events.
    if (successor) this.announceCreation(successor);
    else this.afterCommit.outboxSignal.notify();
    return { kind: 'settled', status: settlement.status, successorId: successor?.approval.id ?? null };
  }

  /** The successor asks for the same action on behalf of the same requester, who still may not vote on it. */
  private async successorOf(orgId: string, approval: Approval, actor: Actor, now: Date): Promise<Creation> {
    const input: ApprovalCreateInput = {
      action: approval.action,
      payload: approval.payload as ApprovalCreateInput['payload'],
      context: approval.context as ApprovalCreateInput['context'],
      agent: approval.agent,
      policyKey: approval.escalateTo!,
      onBehalfOf: approval.onBehalfOf,
    };
    const requester = approval.requestedBy as Pick<Actor, 'type' | 'id'> | null;
    return createApproval(input, await this.govern(orgId, input, true), { actor, requester }, now, approval.id);
  }

  /** The sweeper: times out approvals overdue by `graceMs` or more, which their expiry missed. */
  async timeOutOverdue(graceMs: number, limit: number, actor: Actor): Promise<number> {
    const overdue = await ApprovalStore.findOverdue(this.data.sql, graceMs, limit);
    let settled = 0;
    for (const { orgId, id } of overdue) {
      if ((await this.timeOut(orgId, id, actor)).kind === 'settled') settled += 1;
    }
    return settled;
  }

  /**
   * The one decide path of every surface (API, console, email link, Slack): a vote, which settles
   * the approval when it is a rejection or reaches the quorum. Who may vote, through which
   * channel, is decided by the database in the same statement (see ag_cast_vote).
   */
  async decide(orgId: string, id: string, decision: DecisionInput, voter: Voter): Promise<ApprovalView> {
    // A vote's events are made for the stage the approval was read at: when other votes moved it to
    // its next stage since, it is read and the vote made again, at most once per stage.
    for (let attempt = 0; attempt < MAX_STAGES; attempt++) {
      const decided = await this.voteOnce(orgId, id, decision, voter);
      if (decided) return decided;
    }
    throw new Error(`approval ${id} kept moving to its next stage while a vote was cast`);
  }

  /** One attempt of `decide`: the view after the vote, or null when the approval's stage moved since it was read. */
  private async voteOnce(orgId: string, id: string, decision: DecisionInput, voter: Voter): Promise<ApprovalView | null> {
    const approval = await this.require(orgId, id);
    if (approval.status !== 'pending') {
      throw new ConflictError(`Approval ${id} is ${approval.status}; only pending approvals can be decided.`);
    }
    if (decision.revision !== undefined && decision.revision !== approval.revision) {
      throw new ConflictError(
        `Approval ${id} is at revision ${approval.revision}, not ${decision.revision}: read it again before deciding.`,
      );
    }
    const now = new Date();
    if (approval.expiresAt && approval.expiresAt <= now) {
      throw new ConflictError(`Approval ${id} expired at ${approval.expiresAt.toISOString()}.`);
    }
    const stages = stagesOf(approval);
    if (decision.editedPayload && (approval.quorum > 1 || (stages && stages.length > 1))) {
      throw new ValidationError([
        {
          path: 'editedPayload',
          message: `${stages && stages.length > 1 ? `This request passes through ${stages.length} stages of reviewers` : `This request needs ${approval.quorum} approvals`}, and every approver must approve the same payload: approve it as it is, or reject it with feedback.`,
        },
      ]);
    }

    const grant = decision.standing ? await this.standingGrant(orgId, approval, decision.standing, voter, now) : null;
    const standingInFor = await this.standsInFor(orgId, id, voter);
    const { vote, recorded, advanced, settling } = voteOn(approval, decision, voter.actor, now, standingInFor);
    const named = decision.revision === undefined ? vote : { ...vote, revision: decision.revision };
    const outcome = grant
      ? await this.standing.grant(
          orgId,
          id,
          voterRecord(voter),
          voter.channel,
          named,
          recorded,
          withStandingGranted(settling, grant),
          grant,
        )
      : await this.writes.castVote(orgId, id, voterRecord(voter), voter.channel, named, recorded, settling, advanced);
    if (outcome === 'stage_moved') return null;
    throwUnlessCast(outcome, approval, voter);
    this.afterCommit.metrics.decisions.inc({ channel: voter.channel, verdict: decision.verdict, settled: String(outcome === 'settled') });
    if (outcome === 'settled') this.afterCommit.settlements.publish(id);
    this.afterCommit.outboxSignal.notify();
    // With a quorum of one, the first vote of the (last) stage settles the approval, so a vote that
    // settled it was the stage's only one, and the earlier stages' votes were all read: the approval
    // as read, with this vote and its settlement, is what the database now holds. Under a larger
    // quorum others may have voted since the read, so it is read again.
    if (outcome === 'settled' && approval.quorum === 1) {
      return this.viewAsSettled({ ...applySettlement(approval, settling.settlement), votes: [...approval.votes, vote] });
    }
    return this.view(await this.require(orgId, id));
  }

  /**
   * The standing approval a member's approving vote grants (docs/policies.md#standing-approvals), or
   * 422 naming what forbids it: a member's own vote, a request one approval settles, a policy that
   * allows it for at least that long, and fields the payload has.
   */
  private async standingGrant(
    orgId: string,
    approval: ApprovalRecord,
    standing: NonNullable<DecisionInput['standing']>,
    voter: Voter,
    now: Date,
  ): Promise<StandingGrant> {
    const refuse = (path: string, message: string) => new ValidationError([{ path, message }], message);
    if (voter.actor.type !== 'user')
      throw refuse('standing', 'A standing approval is granted by a member, in the console: an API key cannot grant one.');
    if (approval.quorum !== 1)
      throw refuse(
        'standing',
        `This request needs ${approval.quorum} approvals: a standing approval approves only requests that one approval settles, so that it never stands in for several people.`,
      );
    if (approval.stages !== null)
      throw refuse(
        'standing',
        'This request is decided in stages: a standing approval approves only requests that one approval settles, so that it never stands in for the stages after.',
      );
    if (!approval.requestedBy)
      throw refuse('standing', 'Nobody is recorded as having made this request, so no later request can be told to be "the same again".');
    const { document } = await this.policies.snapshot(orgId, approval.policyKey, { fresh: true });
    const allowed = document?.standingApproval?.maxSeconds;
    if (!allowed) throw refuse('standing', `The policy '${approval.policyKey}' does not allow standing approvals.`);
    if (standing.forSeconds > allowed)
      throw refuse('standing.forSeconds', `The policy '${approval.policyKey}' allows standing approvals of at most ${allowed} seconds.`);
    const payload = approval.payload as Record<string, unknown>;
    const missing = standing.fields?.find((field) => !Object.hasOwn(payload, field));
    if (missing !== undefined) throw refuse('standing.fields', `The payload has no field '${missing}'.`);
    return {
      id: randomUUID(),
      orgId,
      policyKey: approval.policyKey,
      action: approval.action,
      agent: approval.agent,
      payloadHash: standing.fields ? null : currentPayloadHash(approval),
      payloadFields: standing.fields ? Object.fromEntries(standing.fields.map((field) => [field, payload[field]])) : null,
      grantedBy: { type: 'user', id: voter.actor.id, email: voter.actor.email },
      channel: voter.channel,
      sourceApprovalId: approval.id,
      createdAt: now,
      expiresAt: new Date(now.getTime() + standing.forSeconds * 1000),
    } as StandingGrant;
  }

  /**
   * Approves a new pending request by the first active standing approval it matches, as the member
   * who granted it, through the vote function; the settling event names the standing approval. The
   * approval as settled, or null when none approved it.
   */
  private async approveByStanding(orgId: string, id: string): Promise<ApprovalRecord | null> {
    for (const candidate of await this.standing.matching(orgId, id)) {
      const approval = await this.require(orgId, id);
      const { vote, recorded, settling } = voteOn(approval, { verdict: 'approved' }, candidate.grantedBy, new Date());
      const named = withStandingApplied(settling, candidate);
      const outcome = await this.standing.apply(orgId, id, candidate.id, vote, recorded, named);
      if (outcome === 'settled') {
        this.afterCommit.metrics.decisions.inc({ channel: 'standing', verdict: 'approved', settled: 'true' });
        this.afterCommit.settlements.publish(id);
        this.afterCommit.outboxSignal.notify();
        return this.require(orgId, id);
      }
      if (outcome === 'not_pending' || outcome === 'duplicate_voter') return null;
    }
    return null;
  }

  /** The organization's standing approvals, newest first. */
  listStanding(tenant: Tenant, active: boolean | undefined, limit: number): Promise<StandingApprovalView[]> {
    return this.standing.list(tenant.orgId, active, limit);
  }

  /**
   * Revokes a standing approval: its granter may (through their session or a key of theirs), and
   * an admin of the console. No request is approved by it once this returns.
   */
  async revokeStanding(tenant: Tenant, id: string): Promise<StandingApprovalView> {
    const standing = await this.standing.find(tenant.orgId, id);
    if (!standing) throw new NotFoundError(`No standing approval with id '${id}' exists.`);
    const isAdmin = tenant.principal.type === 'session' && tenant.principal.role === 'admin';
    if (!isAdmin && principalKey(tenant.principal) !== `user:${standing.grantedBy.id}`)
      throw new ForbiddenError(`Only ${standing.grantedBy.email}, who granted it, or an admin may revoke this standing approval.`);
    const revoked = await this.standing.revoke(tenant.orgId, id, tenant.actor);
    if (revoked) this.afterCommit.outboxSignal.notify();
    if (!revoked)
      throw new ConflictError(
        `Standing approval ${id} is ${standing.revokedAt ? 'revoked' : 'expired'} already; it approves nothing more.`,
      );
    return revoked;
  }

  /** Whom a member voting stands in for as a delegate; a service key stands in for no one, and is not asked. */
  private standsInFor(orgId: string, id: string, voter: Voter): Promise<Delegator[]> {
    const { actor } = voter;
    const member = actor.type === 'user' || (actor.type === 'api_key' && actor.owner?.type === 'user');
    if (!member) return Promise.resolve([]);
    return new ApprovalStore(this.data.db, this.data.sql, orgId).standsInFor(id, voterRecord(voter));
  }

  /**
   * Throws what `decide` would throw for this voter now (refused, settled, voted already), without
   * voting: for a surface that asks something more before the vote (Slack's feedback modal).
   */
  async assertMayVote(orgId: string, id: string, voter: Voter): Promise<void> {
    const store = new ApprovalStore(this.data.db, this.data.sql, orgId);
    const approval = await this.require(orgId, id);
    throwUnlessCast(await store.voteRefusal(id, voterRecord(voter), voter.channel), approval, voter);
  }

  /** An approval of the organization as the API shows it, or null; for surfaces outside the API. */
  async find(orgId: string, id: string): Promise<ApprovalView | null> {
    const approval = await new ApprovalStore(this.data.db, this.data.sql, orgId).findById(id);
    return approval && this.view(approval);
  }

  /**
   * An approval as notices tell it: the view, and which fields its current revision changed from
   * the one before (null for the original), for the mail and the Slack message of a revision.
   */
  async findForNotice(orgId: string, id: string): Promise<ApprovalNotice | null> {
    const approval = await new ApprovalStore(this.data.db, this.data.sql, orgId).findById(id);
    if (!approval) return null;
    const current = (approval.revisions as unknown as RevisionRecord[]).find((entry) => entry.revision === approval.revision);
    return { approval: await this.view(approval), changes: approval.revision > 1 ? (current?.changes ?? null) : null };
  }

  /**
   * The signed receipt of an approval's current settlement (see docs/receipts.md); not found while
   * it is pending, and when signing is off.
   */
  async receipt(tenant: Tenant, id: string): Promise<SignedReceipt> {
    const approval = await this.require(tenant.orgId, id);
    const receipt = receiptOf(approval, currentPayloadHash(approval), await this.receipts.receiptSigner());
    if (!receipt)
      throw new NotFoundError(
        approval.status === 'pending'
          ? `Approval '${id}' is pending: it has a receipt once it is settled.`
          : 'This service signs no receipts: AUDIT_SIGNING_KEY is not set (docs/operations.md).',
      );
    return receipt;
  }

  private async view(approval: Approval & { votes?: ApprovalView['votes'] }): Promise<ApprovalView> {
    return toApprovalView(approval, await this.receipts.receiptSigner());
  }

  /**
   * The view of an approval this process has just settled (by a vote, or by its policy at creation),
   * from what it wrote: the database holds the same, but for the seq of the event that settled it,
   * which the receipt names, read only when receipts are signed.
   */
  private async viewAsSettled(approval: Approval & { votes?: ApprovalView['votes'] }): Promise<ApprovalView> {
    const signer = await this.receipts.receiptSigner();
    const receiptSeq = signer ? await this.lookups.receiptSeq(approval.orgId, approval.id) : null;
    return toApprovalView({ ...approval, receiptSeq }, signer);
  }

  private async require(orgId: string, id: string): Promise<ApprovalRecord> {
    const approval = await this.lookups.findById(orgId, id);
    if (!approval) throw new NotFoundError(`No approval with id '${id}' exists.`);
    return approval;
  }
}

/** What a notice of an approval tells: the approval, and what its revision changed (see findForNotice). */
export interface ApprovalNotice {
  approval: ApprovalView;
  changes: ChangedFields | null;
}

/** The error of a vote that was not cast (or would not be); nothing for one that was. */
function throwUnlessCast(outcome: Exclude<VoteOutcome, 'stage_moved'> | null, approval: Approval, voter: Voter): void {
  switch (outcome) {
    case 'not_pending':
      throw new ConflictError(`Approval ${approval.id} was settled by another decision, expired, or was revised since it was read.`);
    case 'duplicate_voter':
      throw new ConflictError(
        stagesOf(approval)
          ? `You already voted on approval ${approval.id}, in an earlier stage or this one; each reviewer votes once, in one stage only.`
          : `You already voted on approval ${approval.id}; each reviewer votes once.`,
      );
    case 'recorded':
    case 'advanced':
    case 'settled':
    case null:
      return;
    default:
      throw new DecisionRefusedError(outcome, REFUSALS[outcome](approval, voter));
  }
}

function monthlyLimitReached(quota: MonthlyQuota): PaymentRequiredError {
  return new PaymentRequiredError(
    `The free plan allows ${quota.limit} approvals per calendar month (UTC); ${quota.month} has reached it. Upgrade the plan to create more.`,
  );
}

/** The API key that created an approval, with its name, as `include=createdByKey` shows it. */
function creatingKey(approval: ListedApproval): ApprovalView['createdByKey'] {
  const requester = approval.requestedBy as Pick<Actor, 'type' | 'id'> | null;
  return requester?.type === 'api_key' ? { id: requester.id, name: approval.requesterKeyName ?? null } : null;
}

export function toApprovalView(approval: Approval & { votes?: ApprovalView['votes'] }, signer: ReceiptSigner | null): ApprovalView {
  const changesRequested = approval.status === 'changes_requested';
  const hash = currentPayloadHash(approval);
  return {
    id: approval.id,
    status: approval.status,
    action: approval.action,
    payload: approval.payload as ApprovalView['payload'],
    ...(approval.context !== null ? { context: approval.context as ApprovalView['context'] } : {}),
    createdAt: approval.createdAt.toISOString(),
    expiresAt: approval.expiresAt?.toISOString() ?? null,
    feedback: approval.feedback,
    ...(approval.escalatedTo ? { escalatedTo: approval.escalatedTo } : {}),
    ...(approval.escalatedFrom ? { escalatedFrom: approval.escalatedFrom } : {}),
    agent: approval.agent,
    policyKey: approval.policyKey,
    policyVersion: approval.policyVersion,
    payloadHash: hash,
    ...decisionOf(approval),
    quorum: approval.quorum,
    stage: currentStage(approval),
    votes: approval.votes ?? [],
    onBehalfOf: approval.onBehalfOf,
    revision: approval.revision,
    revisions: (approval.revisions as unknown as RevisionRecord[]).map(
      ({ idempotencyKey: _kept, changes: _listed, ...revision }) => revision,
    ),
    ...(changesRequested ? { suggestedPayload: (approval.suggestedPayload ?? null) as ApprovalView['suggestedPayload'] } : {}),
    receipt: receiptOf(approval, hash, signer),
  };
}

/** The settling events of a vote that grants a standing approval name it (docs/policies.md#standing-approvals). */
function withStandingGranted(settling: Settling, grant: StandingGrant): Settling {
  const standingApprovalGranted = { id: grant.id, expiresAt: grant.expiresAt.toISOString(), fields: grant.payloadFields };
  return { ...settling, events: settling.events.map((event) => ({ ...event, data: { ...event.data, standingApprovalGranted } })) };
}

/** The settling events of an approval by a standing approval name it and the member who granted it. */
function withStandingApplied(settling: Settling, standing: { id: string; grantedBy: { id: string; email: string } }): Settling {
  const standingApproval = { id: standing.id, grantedBy: standing.grantedBy };
  return { ...settling, events: settling.events.map((event) => ({ ...event, data: { ...event.data, standingApproval } })) };
}
