import { selectList, type ColumnMap } from '../../data/columns.js';
import { transactionSql, type Database, type Sql } from '../../data/database.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import type { StandingApproval } from '../../generated/prisma/client.js';
import { serializeAuditEvent, type Actor, type AuditEventDraft } from '../audit/audit-events.js';
import type { Settling, Vote, VoteOutcome, VoterRecord } from './approval-types.js';
import type { StandingApprovalView } from './standing-approval-schemas.js';

/** What ag_apply_standing_approval answers: a vote's outcome, or that the grant approves nothing now. */
export type StandingOutcome = VoteOutcome | 'standing_inactive';

/** A grant as it is written: the row by column, but for the requester, which the database reads from the approval. */
export type StandingGrant = Omit<StandingApproval, 'requesterKey' | 'revokedAt' | 'revokedBy'>;

// Columns of the table read with raw SQL; see ColumnMap for why a new one cannot be left out.
export const STANDING_APPROVAL_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  policyKey: 'policy_key',
  action: 'action',
  agent: 'agent',
  requesterKey: 'requester_key',
  payloadHash: 'payload_hash',
  payloadFields: 'payload_fields',
  grantedBy: 'granted_by',
  channel: 'channel',
  sourceApprovalId: 'source_approval_id',
  createdAt: 'created_at',
  expiresAt: 'expires_at',
  revokedAt: 'revoked_at',
  revokedBy: 'revoked_by',
} as const satisfies ColumnMap<StandingApproval>;

type ViewRow = Omit<StandingApprovalView, 'createdAt' | 'expiresAt' | 'revokedAt'> & {
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
};

const columns = STANDING_APPROVAL_COLUMNS;
const VIEW_COLUMNS = selectList<ViewRow>({
  id: columns.id,
  policyKey: columns.policyKey,
  action: columns.action,
  agent: columns.agent,
  requester: columns.requesterKey,
  payloadHash: columns.payloadHash,
  fields: columns.payloadFields,
  grantedBy: columns.grantedBy,
  sourceApprovalId: columns.sourceApprovalId,
  createdAt: columns.createdAt,
  expiresAt: columns.expiresAt,
  revokedAt: columns.revokedAt,
  revokedBy: columns.revokedBy,
  active: `${columns.revokedAt} IS NULL AND ${columns.expiresAt} > clock_timestamp()`,
});

const toView = (row: ViewRow): StandingApprovalView => ({
  ...row,
  createdAt: row.createdAt.toISOString(),
  expiresAt: row.expiresAt.toISOString(),
  revokedAt: row.revokedAt?.toISOString() ?? null,
});

const voteArguments = (vote: Vote, recorded: AuditEventDraft[], settling: Settling) => [
  JSON.stringify(vote),
  JSON.stringify(recorded.map(serializeAuditEvent)),
  JSON.stringify(settling.settlement),
  JSON.stringify(settling.events.map(serializeAuditEvent)),
];

/** standing_approvals (docs/policies.md#standing-approvals): grants, their matches, their revocation. */
export class StandingApprovalStore {
  constructor(
    private readonly sql: Sql,
    private readonly db: Database,
  ) {}

  /** Casts the approving vote and, when it settles the approval, writes the grant, in one transaction. */
  async grant(
    orgId: string,
    approvalId: string,
    voter: VoterRecord,
    channel: string,
    vote: Vote,
    recorded: AuditEventDraft[],
    settling: Settling,
    grant: StandingGrant,
  ): Promise<VoteOutcome> {
    const [row] = await this.sql.query<{ outcome: VoteOutcome }>(
      'standing-grant',
      'SELECT ag_grant_standing_approval($1, $2, $3::jsonb, $4, $5::jsonb, $6::jsonb, $7::jsonb, $8::jsonb, $9::jsonb) AS outcome',
      [
        orgId,
        approvalId,
        JSON.stringify(voter),
        channel,
        ...voteArguments(vote, recorded, settling),
        JSON.stringify({
          id: grant.id,
          org_id: grant.orgId,
          policy_key: grant.policyKey,
          action: grant.action,
          agent: grant.agent,
          payload_hash: grant.payloadHash,
          payload_fields: grant.payloadFields,
          granted_by: grant.grantedBy,
          channel: grant.channel,
          source_approval_id: grant.sourceApprovalId,
          created_at: grant.createdAt,
          expires_at: grant.expiresAt,
        }),
      ],
    );
    return row!.outcome;
  }

  /**
   * The active grants that match a pending approval, oldest first: same policy, action and agent,
   * created by the same principal, the same payload (or the same values of the grant's fields),
   * and a request that one approval settles.
   */
  matching(orgId: string, approvalId: string): Promise<{ id: string; grantedBy: { type: 'user'; id: string; email: string } }[]> {
    return this.sql.query(
      'standing-matching',
      `SELECT s.id, s.granted_by AS "grantedBy"
       FROM approvals a JOIN standing_approvals s
         ON s.org_id = a.org_id AND s.policy_key = a.policy_key AND s.action = a.action
        AND s.agent IS NOT DISTINCT FROM a.agent AND s.requester_key = ag_principal_key(a.requested_by)
       WHERE a.id = $2 AND a.org_id = $1 AND a.status = 'pending' AND a.quorum = 1 AND a.requested_by IS NOT NULL
         AND s.revoked_at IS NULL AND s.expires_at > clock_timestamp()
         AND (s.payload_hash = a.payload_hash
              OR (s.payload_fields IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM jsonb_each(s.payload_fields) f WHERE a.payload->f.key IS DISTINCT FROM f.value)))
       ORDER BY s.created_at, s.id`,
      [orgId, approvalId],
    );
  }

  /** Approves the approval by the grant, if the grant still may (see ag_apply_standing_approval). */
  async apply(orgId: string, approvalId: string, standingId: string, vote: Vote, recorded: AuditEventDraft[], settling: Settling) {
    const [row] = await this.sql.query<{ outcome: StandingOutcome }>(
      'standing-apply',
      'SELECT ag_apply_standing_approval($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7::jsonb) AS outcome',
      [orgId, approvalId, standingId, ...voteArguments(vote, recorded, settling)],
    );
    return row!.outcome;
  }

  async list(orgId: string, active: boolean | undefined, limit: number): Promise<StandingApprovalView[]> {
    const rows = await this.sql.query<ViewRow>(
      'standing-list',
      `SELECT ${VIEW_COLUMNS} FROM standing_approvals WHERE org_id = $1
         AND ($2::boolean IS NULL OR $2 = (revoked_at IS NULL AND expires_at > clock_timestamp()))
       ORDER BY created_at DESC, id DESC LIMIT $3`,
      [orgId, active ?? null, limit],
    );
    return rows.map(toView);
  }

  async find(orgId: string, id: string): Promise<StandingApprovalView | null> {
    const [row] = await this.sql.query<ViewRow>(
      'standing-find',
      `SELECT ${VIEW_COLUMNS} FROM standing_approvals WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    return row ? toView(row) : null;
  }

  /**
   * Revokes an active grant, with its standing_approval.revoked audit event; null when it is no
   * longer active. Waits for votes it is casting (they hold it FOR SHARE), so none follows once
   * this returns.
   */
  async revoke(orgId: string, id: string, actor: Actor): Promise<StandingApprovalView | null> {
    return this.db.$transaction(async (tx) => {
      const [row] = await transactionSql(tx).query<ViewRow>(
        null,
        `UPDATE standing_approvals SET revoked_at = clock_timestamp(), revoked_by = $3::jsonb
         WHERE org_id = $1::uuid AND id = $2::uuid AND revoked_at IS NULL AND expires_at > clock_timestamp()
         RETURNING ${VIEW_COLUMNS}`,
        [orgId, id, JSON.stringify({ type: actor.type, id: actor.id })],
      );
      if (!row) return null;
      await appendAuditEvents(tx, orgId, [
        {
          type: 'standing_approval.revoked',
          actor,
          createdAt: new Date(),
          data: { standingApprovalId: id, policyKey: row.policyKey, action: row.action, agent: row.agent, grantedBy: row.grantedBy },
        },
      ]);
      return toView(row);
    });
  }
}
