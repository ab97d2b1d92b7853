import { randomUUID } from 'node:crypto';
import { selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, Sql } from '../../data/database.js';
import type { Policy } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import type { PolicyDocument } from './policy-schemas.js';

export type { Policy };

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
  reviewerRoles: 'reviewer_roles',
  reviewerEmails: 'reviewer_emails',
  quorum: 'quorum',
  allowSelfApproval: 'allow_self_approval',
  channels: 'channels',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as const satisfies ColumnMap<Policy>;

const SELECT_POLICY = `SELECT ${selectList(POLICY_COLUMNS)} FROM policies`;

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

  list(): Promise<Policy[]> {
    return this.db.policy.findMany({ where: { orgId: this.orgId }, orderBy: { key: 'asc' } });
  }

  /** Creates or replaces the policy and appends its audit event in one transaction. */
  upsert(key: string, document: PolicyDocument, event: AuditEventDraft): Promise<Policy> {
    const fields = {
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
      // Every write renews the revision, which tells approval creation a cached evaluation is stale.
      revision: randomUUID(),
      updatedAt: event.createdAt,
    };
    return this.db.$transaction(async (tx) => {
      const policy = await tx.policy.upsert({
        where: { orgId_key: { orgId: this.orgId, key } },
        create: { orgId: this.orgId, key, createdAt: event.createdAt, ...fields },
        update: fields,
      });
      await appendAuditEvents(tx, this.orgId, [event]);
      return policy;
    });
  }

  /** Deletes the policy with its audit event; false when there was none. */
  delete(key: string, event: AuditEventDraft): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const { count } = await tx.policy.deleteMany({ where: { orgId: this.orgId, key } });
      if (count === 0) return false;
      await appendAuditEvents(tx, this.orgId, [event]);
      return true;
    });
  }
}
