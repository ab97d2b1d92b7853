import { randomUUID } from 'node:crypto';
import { byColumn, pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, Sql } from '../../data/database.js';
import { Prisma, type Policy, type PolicyVersion } from '../../generated/prisma/client.js';
import { serializeAuditEvent, type AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import { ORG_LIMITS } from '../orgs/org-limits.js';
import { publicPolicyDocument, type PolicyDocument } from './policy-schemas.js';

export type { Policy, PolicyVersion };

/** Every column of `policies`; see ColumnMap for why a new one cannot be left out. */
export const POLICY_COLUMNS = {
  orgId: 'org_id',
  key: 'key',
  rules: 'rules',
  defaultOutcome: 'default_outcome',
  timeoutSeconds: 'timeout_seconds',
  onTimeout: 'on_timeout',
  escalateTo: 'escalate_to',
  revision: 'revision',
  version: 'version',
  shadow: 'shadow',
  shadowSince: 'shadow_since',
  reviewerRoles: 'reviewer_roles',
  reviewerEmails: 'reviewer_emails',
  quorum: 'quorum',
  allowSelfApproval: 'allow_self_approval',
  channels: 'channels',
  stages: 'stages',
  remindAfterSeconds: 'remind_after_seconds',
  remindEverySeconds: 'remind_every_seconds',
  standingApprovalMaxSeconds: 'standing_approval_max_seconds',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as const satisfies ColumnMap<Policy>;

/** A request stored under a policy key, as a replay evaluates it again, with what its policy said then. */
export interface StoredRequest {
  id: string;
  action: string;
  payload: unknown;
  agent: string | null;
  context: unknown;
  policyOutcome: 'allow' | 'review';
}

/**
 * Read from approvals: the payload the policy evaluated, which is the stored one unless a reviewer
 * approved an edit of it (its hash then differs from the current revision's), in which case it is
 * the payload of the audit event that recorded the evaluation.
 */
const STORED_REQUEST_COLUMNS = {
  id: 'a.id',
  action: 'a.action',
  payload: `CASE WHEN a.payload_hash IS NOT DISTINCT FROM a.revisions->-1->>'payloadHash' THEN a.payload ELSE coalesce((
      SELECT e.data::jsonb->'payload' FROM audit_events e
      WHERE e.org_id = a.org_id AND e.action = a.action AND e.type IN ('approval.created', 'approval.revised')
        AND e.data::jsonb->>'approvalId' = a.id::text AND coalesce((e.data::jsonb->>'revision')::integer, 1) = a.revision
      ORDER BY e.seq DESC LIMIT 1), a.payload) END`,
  agent: 'a.agent',
  context: 'a.context',
  policyOutcome: 'a.policy_outcome',
} as const satisfies ColumnMap<StoredRequest>;

/** What ag_put_policy answers: the outcome, and for a stored policy the columns the function decided. */
type PutPolicyRow = { outcome: 'stored' | 'unknown_escalation_target' | 'limit_reached' } & Pick<
  Policy,
  'version' | 'createdAt' | 'shadowSince'
>;
export const PUT_POLICY_COLUMNS = {
  outcome: 'outcome',
  ...pickColumns(POLICY_COLUMNS, ['version', 'createdAt', 'shadowSince']),
} as const satisfies ColumnMap<PutPolicyRow>;

/** How often the live policy and its shadow said each pair of outcomes, since `since`. */
export interface ShadowTally {
  live: 'allow' | 'review';
  shadow: 'allow' | 'review';
  count: number;
}

export interface ShadowDisagreement {
  approvalId: string;
  live: ShadowTally['live'];
  shadow: ShadowTally['shadow'];
  createdAt: Date;
}

const SELECT_POLICY = `SELECT ${selectList(POLICY_COLUMNS)} FROM policies`;
const POLICY_KEY = Prisma.raw(selectList(pickColumns(POLICY_COLUMNS, ['key'])));

/** Policies of one organization; every query is scoped to the id given at construction. */
export class PolicyStore {
  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
    private readonly orgId: string,
  ) {}

  /** Read by every approval creation, hence a prepared statement rather than a Prisma query. */
  async find(key: string): Promise<Policy | null> {
    const [row] = await this.sql.query<Policy>('policy-by-key', `${SELECT_POLICY} WHERE org_id = $1 AND key = $2`, [this.orgId, key]);
    return row ?? null;
  }

  /** Up to `limit` policies by key, after the key `after` when given. */
  list({ after, limit }: { after?: string; limit: number }): Promise<Policy[]> {
    return this.db.policy.findMany({
      where: { orgId: this.orgId, ...(after === undefined ? {} : { key: { gt: after } }) },
      orderBy: { key: 'asc' },
      take: limit,
    });
  }

  /**
   * Creates or replaces the policy as the next version of its key, with the version's row and its
   * audit event, in one statement (ag_put_policy); or, when `escalateTo` names another policy that
   * does not exist, or when a new policy would pass the organization's limit, stores nothing.
   * One statement rather than a transaction of several: PUTs of one organization take turns under
   * its limit's lock, and a turn of one round trip keeps a burst of them from queueing for seconds.
   */
  async upsert(
    key: string,
    document: PolicyDocument,
    event: AuditEventDraft,
  ): Promise<Policy | 'unknown_escalation_target' | 'limit_reached'> {
    const fields: Omit<Policy, 'version' | 'createdAt' | 'shadowSince'> = {
      orgId: this.orgId,
      key,
      rules: document.rules,
      defaultOutcome: document.defaultOutcome,
      timeoutSeconds: document.timeoutSeconds,
      onTimeout: document.onTimeout,
      escalateTo: document.escalateTo,
      reviewerRoles: document.reviewers.roles,
      reviewerEmails: document.reviewers.members,
      quorum: document.quorum,
      allowSelfApproval: document.allowSelfApproval,
      channels: document.channels,
      stages: document.stages,
      remindAfterSeconds: document.remindAfterSeconds,
      remindEverySeconds: document.remindEverySeconds,
      standingApprovalMaxSeconds: document.standingApproval?.maxSeconds ?? null,
      shadow: document.shadow,
      // Every write renews the revision, which tells approval creation a cached evaluation is stale.
      revision: randomUUID(),
      updatedAt: event.createdAt,
    };
    // The version is appended to the event's data by the function, as its last member.
    const serialized = serializeAuditEvent(event);
    const [row] = await this.sql.query<PutPolicyRow>(
      'put-policy',
      `SELECT ${selectList(PUT_POLICY_COLUMNS)} FROM ag_put_policy($1::jsonb, $2::jsonb, $3::jsonb, $4::integer)`,
      [
        // A shadow is set now unless it is the one already set (the function keeps that one's time).
        JSON.stringify(
          byColumn<Policy>(POLICY_COLUMNS, {
            ...fields,
            version: 0,
            createdAt: event.createdAt,
            shadowSince: document.shadow ? event.createdAt : null,
          }),
        ),
        JSON.stringify({ document: publicPolicyDocument(document), changedBy: changedByOf(event.actor), createdAt: event.createdAt }),
        JSON.stringify(serialized),
        ORG_LIMITS.policies,
      ],
    );
    const { outcome, ...stored } = row!;
    if (outcome !== 'stored') return outcome;
    return { ...fields, ...stored } as Policy;
  }

  /**
   * The newest `limit` requests evaluated under `key` (orphans were not) created in the range,
   * newest first: what a replay evaluates again.
   */
  storedRequests(
    key: string,
    { from, to, limit }: { from?: Date | undefined; to?: Date | undefined; limit: number },
  ): Promise<StoredRequest[]> {
    return this.sql.query<StoredRequest>(
      'stored-requests-of-policy',
      `SELECT ${selectList(STORED_REQUEST_COLUMNS)} FROM approvals a
       WHERE a.org_id = $1 AND a.policy_key = $2 AND a.policy_outcome IS NOT NULL
         AND ($3::timestamptz IS NULL OR a.created_at >= $3) AND ($4::timestamptz IS NULL OR a.created_at <= $4)
       ORDER BY a.created_at DESC, a.id DESC LIMIT $5`,
      [this.orgId, key, from ?? null, to ?? null, limit],
    );
  }

  /** The live and shadow outcomes of the requests created under `key` since `since`, counted by pair. */
  shadowTallies(key: string, since: Date): Promise<ShadowTally[]> {
    return this.sql.query<ShadowTally>(
      'shadow-tallies-of-policy',
      `SELECT policy_outcome AS live, shadow_outcome->>'outcome' AS shadow, count(*)::integer AS count FROM approvals
       WHERE org_id = $1 AND policy_key = $2 AND created_at >= $3 AND shadow_outcome IS NOT NULL AND policy_outcome IS NOT NULL
       GROUP BY 1, 2 ORDER BY 1, 2`,
      [this.orgId, key, since],
    );
  }

  /**
   * The newest requests under `key` since `since` on which the shadow disagreed with the policy,
   * up to `perPair` of each pair of outcomes, newest first.
   */
  shadowDisagreements(key: string, since: Date, perPair: number): Promise<ShadowDisagreement[]> {
    return this.sql.query<ShadowDisagreement>(
      'shadow-disagreements-of-policy',
      `SELECT id AS "approvalId", live, shadow, created_at AS "createdAt" FROM (
         SELECT id, created_at, policy_outcome AS live, shadow_outcome->>'outcome' AS shadow,
                row_number() OVER (PARTITION BY policy_outcome, shadow_outcome->>'outcome' ORDER BY created_at DESC, id DESC) AS rank
         FROM approvals
         WHERE org_id = $1 AND policy_key = $2 AND created_at >= $3 AND shadow_outcome IS NOT NULL AND policy_outcome IS NOT NULL
           AND policy_outcome <> shadow_outcome->>'outcome'
       ) AS ranked
       WHERE rank <= $4 ORDER BY created_at DESC, id DESC`,
      [this.orgId, key, since, perPair],
    );
  }

  /** One version of the policy under `key`, kept also after the policy was deleted. */
  findVersion(key: string, version: number): Promise<PolicyVersion | null> {
    return this.db.policyVersion.findUnique({ where: { orgId_key_version: { orgId: this.orgId, key, version } } });
  }

  /** Up to `limit` versions under `key`, newest first, older than `before` when given. */
  listVersions(key: string, { before, limit }: { before?: number; limit: number }): Promise<PolicyVersion[]> {
    return this.db.policyVersion.findMany({
      where: { orgId: this.orgId, key, ...(before === undefined ? {} : { version: { lt: before } }) },
      orderBy: { version: 'desc' },
      take: limit,
    });
  }

  /**
   * Deletes the policy with its audit event, unless another policy escalates to it. The row is
   * locked FOR UPDATE before the references are read, so a concurrent PUT that names it (holding
   * it FOR KEY SHARE) has either committed, and is seen, or waits and then finds it gone.
   */
  delete(key: string, event: AuditEventDraft): Promise<'deleted' | 'not_found' | { referencedBy: string[] }> {
    return this.db.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<Pick<Policy, 'key'>[]>`
        SELECT ${POLICY_KEY} FROM policies WHERE org_id = ${this.orgId}::uuid AND key = ${key} FOR UPDATE`;
      if (locked.length === 0) return 'not_found' as const;
      const referencing = await tx.$queryRaw<Pick<Policy, 'key'>[]>`
        SELECT ${POLICY_KEY} FROM policies WHERE org_id = ${this.orgId}::uuid AND escalate_to = ${key} AND key <> ${key} ORDER BY key`;
      if (referencing.length > 0) return { referencedBy: referencing.map((row) => row.key) };
      await tx.policy.delete({ where: { orgId_key: { orgId: this.orgId, key } } });
      await appendAuditEvents(tx, this.orgId, [event]);
      return 'deleted' as const;
    });
  }
}

/** Who stored a version: the audit actor, without a key's owner (the audit event names the key). */
function changedByOf(actor: AuditEventDraft['actor']): Prisma.InputJsonValue {
  return actor.type === 'user' ? { type: actor.type, id: actor.id, email: actor.email } : { type: actor.type, id: actor.id };
}
