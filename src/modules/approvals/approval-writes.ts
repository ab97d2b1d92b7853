import type { Sql } from '../../data/database.js';
import { GroupCommit, type BatchRun, type GroupCommitOptions } from '../../lib/group-commit.js';
import { serializeAuditEvent, type AuditEventDraft } from '../audit/audit-events.js';
import type { DecisionChannel } from '../policies/policy-schemas.js';
import { toApprovalRecord, type CreateOutcome, type MonthlyQuota } from './approval-store.js';
import type { Creation, Settlement, Settling, Vote, VoteOutcome, VoterRecord } from './approval-types.js';

/** A creation as ag_write_batch('create', ...) takes it. */
export interface CreationItem {
  orgId: string;
  approval: Record<string, unknown>;
  events: ReturnType<typeof serializeAuditEvent>[];
  monthlyLimit: number | null;
  month: string | null;
  policyRevision: string | null;
}

/** A vote as ag_write_batch('vote', ...) takes it. */
export interface VoteItem {
  orgId: string;
  id: string;
  voter: VoterRecord;
  channel: DecisionChannel;
  /**
   * The vote, and the revision it is for when the voter named one (ag_cast_vote refuses it at any
   * other); its `stage` is the one its events were made for (ag_cast_vote answers `stage_moved` at any other).
   */
  vote: Vote & { revision?: number };
  recordedEvents: ReturnType<typeof serializeAuditEvent>[];
  /** Appended when the vote completes a stage before the last (docs/policies.md#stages). */
  advancedEvents: ReturnType<typeof serializeAuditEvent>[];
  settlement: Settlement;
  settledEvents: ReturnType<typeof serializeAuditEvent>[];
}

/** A timeout as ag_write_batch('timeout', ...) takes it (see ag_settle_approval with 'reached'). */
export interface TimeoutItem {
  orgId: string;
  id: string;
  settlement: Settlement;
  events: ReturnType<typeof serializeAuditEvent>[];
}

export function creationItem(orgId: string, { approval, events, policyRevision }: Creation, quota: MonthlyQuota | null): CreationItem {
  return {
    orgId,
    approval: toApprovalRecord(orgId, approval),
    events: events.map(serializeAuditEvent),
    monthlyLimit: quota?.limit ?? null,
    month: quota?.month ?? null,
    policyRevision,
  };
}

export function voteItem(
  orgId: string,
  id: string,
  voter: VoterRecord,
  channel: DecisionChannel,
  vote: Vote & { revision?: number },
  recordedEvents: AuditEventDraft[],
  settling: Settling,
  advancedEvents: AuditEventDraft[] = [],
): VoteItem {
  return {
    orgId,
    id,
    voter,
    channel,
    vote,
    recordedEvents: recordedEvents.map(serializeAuditEvent),
    advancedEvents: advancedEvents.map(serializeAuditEvent),
    settlement: settling.settlement,
    settledEvents: settling.events.map(serializeAuditEvent),
  };
}

/** An item the database could not write; its batch went on without it. */
export class WriteFailedError extends Error {
  override name = 'WriteFailedError';
}

function outcomeOf(outcome: string): string {
  if (outcome.startsWith('failed: ')) throw new WriteFailedError(outcome.slice('failed: '.length));
  return outcome;
}

type WriteKind = 'create' | 'vote' | 'timeout';

/**
 * The approval writes of this process, by group commit: creations, votes and timeouts that arrive
 * while earlier ones of their kind are being written go together in one statement and one commit
 * (ag_write_batch), taking each organization's chain head once per batch. Each caller still gets
 * its own outcome, only once its rows are durable; idempotency, quota, who may vote and whether a
 * deadline has passed are still decided by the database, item by item. Timeouts need it as much
 * as requests do: each takes its organization's chain head, so one at a time, an organization's
 * expiries falling due together queued behind each other's commits.
 */
export class ApprovalWrites {
  private readonly creations: GroupCommit<CreationItem, string>;
  private readonly votes: GroupCommit<VoteItem, string>;
  private readonly timeouts: GroupCommit<TimeoutItem, string>;

  constructor(
    sql: Sql,
    { onBatch, ...options }: Omit<GroupCommitOptions, 'onBatch'> & { onBatch(operation: WriteKind, batch: BatchRun): void },
  ) {
    const groupCommit = <Item>(kind: WriteKind) =>
      new GroupCommit<Item, string>(
        async (items) => {
          const [row] = await sql.query<{ outcomes: string[] }>('write-batch', 'SELECT ag_write_batch($1, $2::jsonb) AS outcomes', [
            kind,
            JSON.stringify(items),
          ]);
          return row!.outcomes;
        },
        { ...options, onBatch: (batch) => onBatch(kind, batch) },
      );
    this.creations = groupCommit('create');
    this.votes = groupCommit('vote');
    this.timeouts = groupCommit('timeout');
  }

  /**
   * Inserts the approval with its audit events (and their outbox rows). 'duplicate' means the
   * idempotency key was already used in this organization; 'stale_policy' that the policy changed.
   */
  async create(orgId: string, creation: Creation, quota: MonthlyQuota | null): Promise<CreateOutcome> {
    return outcomeOf(await this.creations.submit(creationItem(orgId, creation, quota))) as CreateOutcome;
  }

  /** Casts a vote; the database decides whether it settles the approval (see ag_cast_vote). */
  async castVote(...args: Parameters<typeof voteItem>): Promise<VoteOutcome> {
    return outcomeOf(await this.votes.submit(voteItem(...args))) as VoteOutcome;
  }

  /**
   * Applies a timeout's settlement and events if the approval is still waiting and its deadline
   * has passed by the database's clock; false changes nothing.
   */
  async timeOut(orgId: string, id: string, settlement: Settlement, events: AuditEventDraft[]): Promise<boolean> {
    const item = { orgId, id, settlement, events: events.map(serializeAuditEvent) };
    return outcomeOf(await this.timeouts.submit(item)) === 'settled';
  }
}
