import { byColumn, pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import { transactionSql, type Database, type Sql } from '../../data/database.js';
import { GroupCommit } from '../../lib/group-commit.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import type { DecisionChannel } from '../policies/policy-schemas.js';
import type { ApprovalStatus } from './approval-schemas.js';
import type {
  Approval,
  ApprovalRecord,
  Creation,
  Delegator,
  NewApproval,
  ReviseOutcome,
  Revising,
  Settlement,
  VoteOutcome,
  VoterRecord,
} from './approval-types.js';
import { auditEventsArgument } from '../audit/audit-store.js';
import type { Actor } from '../audit/audit-events.js';

/** A page of GET /v1/approvals: newest first, after the position of `after` (exclusive). */
export interface ApprovalListing {
  statuses?: readonly ApprovalStatus[];
  action?: string;
  agent?: string;
  policyKey?: string;
  from?: Date;
  to?: Date;
  after?: { createdAt: Date; id: string };
  /** Only pending approvals this voter may decide through this channel, and has not voted on yet. */
  decidableBy?: { voter: VoterRecord; channel: DecisionChannel };
  /** Each row also with the name of the API key that created it (`requesterKeyName`). */
  withCreatingKey?: boolean;
  limit: number;
}

/** A listed approval: with `requesterKeyName` when the listing asked for it (null for an unnamed key, or when no key created it). */
export type ListedApproval = ApprovalRecord & { requesterKeyName?: string | null };

export interface MonthlyQuota {
  limit: number;
  /** UTC calendar month, `YYYY-MM`. */
  month: string;
}

/** `stale_policy`: the policy changed since it was read for evaluation; evaluate again. */
export type CreateOutcome = 'created' | 'duplicate' | 'quota_exceeded' | 'stale_policy';

/**
 * Approvals of one organization. Every query carries the organization id given at construction,
 * so no caller can read or change another organization's approvals.
 */
export class ApprovalStore {
  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
    private readonly orgId: string,
  ) {}

  async findById(id: string): Promise<ApprovalRecord | null> {
    const [row] = await this.sql.query<ApprovalRecord>('approval-by-id', `${SELECT_APPROVAL} WHERE ${oneApproval('$1', '$2')}`, [
      this.orgId,
      id,
    ]);
    return row ?? null;
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<ApprovalRecord | null> {
    const [row] = await this.sql.query<ApprovalRecord>(
      'approval-by-idempotency-key',
      `${SELECT_APPROVAL} WHERE org_id = $1 AND idempotency_key = $2`,
      [this.orgId, idempotencyKey],
    );
    return row ?? null;
  }

  /**
   * Keyset paging over (created_at, id), newest first. Each exact-match filter has an index that
   * leads with it and continues in that order; several statuses are read as one ordered scan per
   * status, merged, so no page ever sorts more than `limit` rows per status.
   */
  async list(listing: ApprovalListing): Promise<ListedApproval[]> {
    const values: unknown[] = [this.orgId];
    const bind = (value: unknown) => `$${values.push(value)}`;
    const conditions = ['org_id = $1'];
    if (listing.action !== undefined) conditions.push(`action = ${bind(listing.action)}`);
    if (listing.agent !== undefined) conditions.push(`agent = ${bind(listing.agent)}`);
    if (listing.policyKey !== undefined) conditions.push(`policy_key = ${bind(listing.policyKey)}`);
    if (listing.from) conditions.push(`created_at >= ${bind(listing.from)}`);
    if (listing.to) conditions.push(`created_at <= ${bind(listing.to)}`);
    if (listing.after) conditions.push(`(created_at, id) < (${bind(listing.after.createdAt)}, ${bind(listing.after.id)}::uuid)`);
    if (listing.decidableBy) {
      const { channel } = listing.decidableBy;
      const voter = bind(JSON.stringify(listing.decidableBy.voter));
      conditions.push(
        `status = 'pending' AND ag_decision_refusal(approvals, ${voter}::jsonb, ${bind(channel)}) IS NULL
         AND NOT EXISTS (SELECT 1 FROM approval_votes v WHERE v.approval_id = approvals.id AND v.voter_key = ag_principal_key(${voter}::jsonb))`,
      );
    }
    const limit = bind(listing.limit);
    const page = (extra: string) =>
      `SELECT ${SELECT_LIST}${listing.withCreatingKey ? `, ${REQUESTER_KEY_NAME}` : ''} FROM approvals WHERE ${[...conditions, extra].filter(Boolean).join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
    const statuses = listing.statuses ?? [];
    const text =
      statuses.length <= 1
        ? page(statuses.length === 1 ? `status = ${bind(statuses[0])}::"ApprovalStatus"` : '')
        : `SELECT * FROM (${statuses.map((status) => `(${page(`status = ${bind(status)}::"ApprovalStatus"`)})`).join(' UNION ALL ')}) merged
           ORDER BY "createdAt" DESC, id DESC LIMIT ${limit}`;
    // Not prepared: the statement's shape depends on which filters are given.
    return this.sql.query<ListedApproval>(null, text, values);
  }

  async monthlyUsage(month: string): Promise<number> {
    const usage = await this.db.monthlyUsage.findUnique({
      where: { orgId_month: { orgId: this.orgId, month } },
    });
    return usage?.approvals ?? 0;
  }

  /**
   * What ag_cast_vote would answer this voter now, without voting: 'not_pending', a refusal,
   * 'duplicate_voter', or null when the vote would be cast. Checked in the function's order.
   */
  async voteRefusal(id: string, voter: VoterRecord, channel: DecisionChannel): Promise<Exclude<VoteOutcome, 'stage_moved'> | null> {
    const [row] = await this.sql.query<{ refusal: Exclude<VoteOutcome, 'stage_moved'> | null }>(
      'vote-refusal',
      `SELECT CASE
         WHEN a.status <> 'pending' OR a.expires_at <= clock_timestamp() THEN 'not_pending'
         ELSE coalesce(ag_decision_refusal(a, $3::jsonb, $4::text),
                       CASE WHEN EXISTS (SELECT 1 FROM approval_votes v WHERE v.approval_id = a.id AND v.voter_key = ag_principal_key($3::jsonb))
                            THEN 'duplicate_voter' END)
       END AS refusal
       FROM approvals a WHERE ${oneApproval('$1', '$2', 'a')}`,
      [this.orgId, id, JSON.stringify(voter), channel],
    );
    return row ? row.refusal : 'not_pending';
  }

  /** The members the voter stands in for on the approval, as their delegate (ag_stands_in_for); empty for anyone else. */
  async standsInFor(id: string, voter: VoterRecord): Promise<Delegator[]> {
    const [row] = await this.sql.query<{ members: Delegator[] }>(
      'stands-in-for',
      `SELECT ag_stands_in_for(a, ag_principal_of($3::jsonb), ag_principal_of(a.requested_by)) AS members
       FROM approvals a WHERE ${oneApproval('$1', '$2', 'a')}`,
      [this.orgId, id, JSON.stringify(voter)],
    );
    return row?.members ?? [];
  }

  /**
   * Writes a revision over the revision it was made from, with its audit events, if the database
   * agrees (see ag_revise_approval): the requester's principal, an open request for changes, the
   * limit, the policy unchanged since it was evaluated.
   */
  async revise(id: string, reviser: Pick<Actor, 'type' | 'id'>, revising: Revising, maxRevision: number): Promise<ReviseOutcome> {
    const { revision, changes, entry, events, policyRevision } = revising;
    const [row] = await this.sql.query<{ outcome: ReviseOutcome }>(
      'revise-approval',
      'SELECT ag_revise_approval($1::uuid, $2::uuid, $3::jsonb, $4::jsonb, $5::jsonb, $6::integer) AS outcome',
      [
        this.orgId,
        id,
        JSON.stringify({ type: reviser.type, id: reviser.id }),
        JSON.stringify({ revision, changes: byColumn(APPROVAL_COLUMNS, changes as NewApproval), entry, policyRevision }),
        auditEventsArgument(events),
        maxRevision,
      ],
    );
    return row!.outcome;
  }

  /** Settles an approval that timed out into `escalated` and creates its successor, atomically. */
  settleWithSuccessor(id: string, settlement: Settlement, events: AuditEventDraft[], successor: Creation): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const sql = transactionSql(tx);
      if (!(await settleApproval(sql, this.orgId, id, settlement, events, 'reached'))) return false;
      // The successor's policy was read just before; if it changed since, the expiry job runs again.
      const outcome = await insertApproval(sql, this.orgId, successor, null);
      if (outcome !== 'created') throw new Error(`successor of approval ${id} not created: ${outcome}`);
      return true;
    });
  }

  /**
   * Approvals with a running deadline (pending, or waiting for a revision) whose deadline passed
   * `graceMs` ago or more by the database's clock: the ones the deadline watchers and their expiry
   * jobs missed. The statuses are written in the statement, not bound, so that even a generic plan
   * can tell the partial index of running deadlines (approvals_pending_expires_at_idx) serves it.
   */
  static findOverdue(sql: Sql, graceMs: number, limit: number): Promise<Pick<Approval, 'orgId' | 'id'>[]> {
    return sql.query(
      'overdue-approvals',
      `SELECT ${OVERDUE_COLUMNS} FROM approvals
       WHERE ${RUNNING_DEADLINE} AND expires_at <= clock_timestamp() - $1 * interval '1 millisecond'
       ORDER BY expires_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  /**
   * The next `limit` approvals with a running deadline due within `aheadMs` by the database's clock,
   * in deadline order after `after` (where the previous page ended), each with how far off its
   * deadline is (negative once passed), and how far off the first deadline beyond `aheadMs` is.
   * Both walk the partial index of pending deadlines; measuring all against one statement's clock
   * keeps the application's clock out of it.
   */
  static async dueDeadlines(sql: Sql, after: DeadlineCursor | null, limit: number, aheadMs = 0): Promise<DueDeadlines> {
    const horizon = `statement_timestamp() + $4::float8 * interval '1 millisecond'`;
    const rows = await sql.query<DueDeadlineRow>(
      'due-deadlines',
      `(SELECT ${DUE_DEADLINE_COLUMNS} FROM approvals
        WHERE ${RUNNING_DEADLINE} AND expires_at <= ${horizon}
          AND expires_at >= $1 AND (expires_at, id) > ($1, $2)
        ORDER BY expires_at, id LIMIT $3)
       UNION ALL
       SELECT NULL, NULL, NULL, ${UNTIL('min(expires_at)')}
       FROM approvals WHERE ${RUNNING_DEADLINE} AND expires_at > ${horizon}`,
      [after?.expiresAt ?? '-infinity', after?.id ?? NIL_UUID, limit, aheadMs],
    );
    const due = rows
      .filter((row) => row.id !== null)
      .map(({ orgId, id, expiresAt, inMs }) => ({ orgId: orgId!, id: id!, expiresAt: expiresAt!, inMs: inMs! }));
    return { due, nextInMs: rows.find((row) => row.id === null)?.inMs ?? null };
  }
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The approvals whose deadline runs: pending ones, and those waiting for a revision, which expire
 * as pending ones do. Exactly the predicate of the partial index approvals_pending_expires_at_idx.
 */
const RUNNING_DEADLINE = `status IN ('pending', 'changes_requested')`;

/** Where a walk through the deadlines in order stands: the last approval it passed. */
export interface DeadlineCursor {
  expiresAt: Date;
  id: string;
}

export interface DueDeadlines {
  /** `inMs`: until the deadline, by the database's clock; negative once it has passed. */
  due: (DeadlineCursor & { orgId: string; inMs: number })[];
  /** Until the first deadline beyond the look-ahead, by the database's clock; null when no approval is pending with one. */
  nextInMs: number | null;
}

export type Deadline = 'before' | 'reached';

async function insertApproval(
  sql: Sql,
  orgId: string,
  { approval, events, policyRevision }: Creation,
  quota: MonthlyQuota | null,
): Promise<Exclude<CreateOutcome, 'quota_exceeded'>> {
  const [row] = await sql.query<{ outcome: Exclude<CreateOutcome, 'quota_exceeded'> }>(
    'create-approval',
    'SELECT ag_create_approval($1::jsonb, $2::jsonb, $3::integer, $4::text, $5::uuid) AS outcome',
    [
      JSON.stringify(toApprovalRecord(orgId, approval)),
      auditEventsArgument(events),
      quota?.limit ?? null,
      quota?.month ?? null,
      policyRevision,
    ],
  );
  return row!.outcome;
}

async function settleApproval(
  sql: Sql,
  orgId: string,
  id: string,
  settlement: Settlement,
  events: AuditEventDraft[],
  deadline: Deadline,
): Promise<boolean> {
  const [row] = await sql.query<{ settled: boolean }>(
    'settle-approval',
    'SELECT ag_settle_approval($1::uuid, $2::uuid, $3::jsonb, $4::jsonb, $5::text) AS settled',
    [orgId, id, JSON.stringify(settlement), auditEventsArgument(events), deadline],
  );
  return row?.settled === true;
}

/** Every column of `approvals`; see ColumnMap for why a new one cannot be left out. */
export const APPROVAL_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  status: 'status',
  action: 'action',
  payload: 'payload',
  context: 'context',
  agent: 'agent',
  policyKey: 'policy_key',
  idempotencyKey: 'idempotency_key',
  createdAt: 'created_at',
  expiresAt: 'expires_at',
  onTimeout: 'on_timeout',
  escalateTo: 'escalate_to',
  verdict: 'verdict',
  feedback: 'feedback',
  decidedAt: 'decided_at',
  escalatedFrom: 'escalated_from',
  escalatedTo: 'escalated_to',
  payloadHash: 'payload_hash',
  decidedBy: 'decided_by',
  quorum: 'quorum',
  reviewerRoles: 'reviewer_roles',
  reviewerEmails: 'reviewer_emails',
  allowSelfApproval: 'allow_self_approval',
  channels: 'channels',
  onBehalfOf: 'on_behalf_of',
  requestedBy: 'requested_by',
  revision: 'revision',
  revisions: 'revisions',
  suggestedPayload: 'suggested_payload',
  receiptSeq: 'receipt_seq',
  policyVersion: 'policy_version',
  policyOutcome: 'policy_outcome',
  shadowOutcome: 'shadow_outcome',
  stages: 'stages',
  stage: 'stage',
} as const satisfies ColumnMap<Approval>;

/** The approval's votes in the order they came, as the view shows them: with their stage when it has stages. */
const VOTES = `(SELECT coalesce(jsonb_agg(jsonb_build_object(
    'by', v.voter, 'verdict', v.verdict, 'feedback', v.feedback,
    'stage', CASE WHEN approvals.stages IS NOT NULL THEN v.stage END,
    'at', to_char(v.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY v.created_at, v.voter_key), '[]')
  FROM approval_votes v WHERE v.approval_id = approvals.id) AS votes`;

const SELECT_LIST = `${selectList(APPROVAL_COLUMNS)}, ${VOTES}`;

/** The name of the key that created the approval; null for an unnamed key or another requester. */
const REQUESTER_KEY_NAME = `(SELECT k.name FROM api_keys k WHERE k.org_id = approvals.org_id
    AND k.id = CASE WHEN approvals.requested_by->>'type' = 'api_key' THEN (approvals.requested_by->>'id')::uuid END) AS "requesterKeyName"`;
const SELECT_APPROVAL = `SELECT ${SELECT_LIST} FROM approvals`;

const OVERDUE_COLUMNS = selectList(pickColumns(APPROVAL_COLUMNS, ['orgId', 'id']));

/** A due approval, or (all else null) how far off the first deadline still ahead is. */
interface DueDeadlineRow {
  orgId: string | null;
  id: string | null;
  expiresAt: Date | null;
  inMs: number | null;
}
/** Milliseconds from the statement's clock until a moment (negative once it has passed). */
const UNTIL = (moment: string) => `(EXTRACT(EPOCH FROM ${moment} - statement_timestamp()) * 1000)::float8`;
const DUE_DEADLINE_COLUMNS = selectList({
  ...pickColumns(APPROVAL_COLUMNS, ['orgId', 'id', 'expiresAt']),
  inMs: UNTIL('expires_at'),
} satisfies ColumnMap<DueDeadlineRow>);

/**
 * The condition that picks one approval of one organization: its id, which the primary key
 * serves, and its organization compared by IS NOT DISTINCT FROM, which no index serves. Given
 * `org_id =` too, a plan made while the table's statistics lag behind it (a new tenant, a fresh
 * deployment) may walk an (org_id, ...) index through all of the organization's approvals to find
 * one: a deciding vote cost four times as much with 13,500 pending in one organization
 * (test/query-plans.test.ts). ag_cast_vote and ag_settle_approval match the row the same way.
 */
export function oneApproval(orgId: string, id: string, table = 'approvals'): string {
  return `${table}.id = ${id} AND ${table}.org_id IS NOT DISTINCT FROM ${orgId}`;
}

/** Reads by id that share one statement: how many at most, and how many statements run at once. */
const LOOKUP_BATCH = { maxBatch: 200, maxInFlight: 4 };

/**
 * Approvals read by id for every request of the process, batched: reads that arrive while earlier
 * ones run go together in one statement, so 10,000 long-polls opening or waking at once share
 * about 50 queries instead of queueing 10,000 on the pool (each queued query holds its own
 * objects). Every read names its organization, as the store's reads do.
 */
export class ApprovalLookups {
  private readonly byId = new GroupCommit<{ orgId: string; id: string }, ApprovalRecord | null>(async (wanted) => {
    const rows = await this.sql.query<ApprovalRecord>(
      'approvals-by-id',
      `SELECT ${SELECT_LIST} FROM approvals JOIN unnest($1::uuid[], $2::uuid[]) AS wanted (wanted_org, wanted_id) ON ${oneApproval('wanted_org', 'wanted_id')}`,
      [wanted.map((lookup) => lookup.orgId), wanted.map((lookup) => lookup.id)],
    );
    const byKey = new Map(rows.map((row) => [`${row.orgId}/${row.id}`, row]));
    return wanted.map((lookup) => byKey.get(`${lookup.orgId}/${lookup.id}`) ?? null);
  }, LOOKUP_BATCH);

  constructor(private readonly sql: Sql) {}

  findById(orgId: string, id: string): Promise<ApprovalRecord | null> {
    return this.byId.submit({ orgId, id });
  }

  /** The audit event that settled the approval, which its receipt names; null while pending. */
  async receiptSeq(orgId: string, id: string): Promise<bigint | null> {
    const [row] = await this.sql.query<{ receiptSeq: string | null }>(
      'approval-receipt-seq',
      `SELECT receipt_seq::text AS "receiptSeq" FROM approvals WHERE ${oneApproval('$1::uuid', '$2::uuid')}`,
      [orgId, id],
    );
    return row?.receiptSeq == null ? null : BigInt(row.receiptSeq);
  }
}

/** The row as `jsonb_populate_record(NULL::approvals, ...)` reads it: column names as keys. */
export function toApprovalRecord(orgId: string, approval: NewApproval) {
  return byColumn(APPROVAL_COLUMNS, { ...approval, orgId });
}
