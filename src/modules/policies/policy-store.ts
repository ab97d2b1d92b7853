import { randomUUID } from 'node:crypto';
import { pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, Sql } from '../../data/database.js';
import { Prisma, type Policy } from '../../generated/prisma/client.js';
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

  list(): Promise<Policy[]> {
    return this.db.policy.findMany({ where: { orgId: this.orgId }, orderBy: { key: 'asc' } });
  }

  /**
   * Creates or replaces the policy and appends its audit event in one transaction, or, when
   * `escalateTo` names another policy that does not exist, stores nothing. The target's row is
   * held with FOR KEY SHARE until the commit, so a concurrent delete of it (which locks it FOR
   * UPDATE first) either waits and then sees this reference, or wins and leaves nothing to lock.
   */
  upsert(key: string, document: PolicyDocument, event: AuditEventDraft): Promise<Policy | 'unknown_escalation_target'> {
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
    const target = document.escalateTo;
    return this.db.$transaction(async (tx) => {
      if (target !== null && target !== key) {
        const held = await tx.$queryRaw<Pick<Policy, 'key'>[]>`
          SELECT ${POLICY_KEY} FROM policies WHERE org_id = ${this.orgId}::uuid AND key = ${target} FOR KEY SHARE`;
        if (held.length === 0) return 'unknown_escalation_target' as const;
      }
      const policy = await tx.policy.upsert({
        where: { orgId_key: { orgId: this.orgId, key } },
        create: { orgId: this.orgId, key, createdAt: event.createdAt, ...fields },
        update: fields,
      });
      await appendAuditEvents(tx, this.orgId, [event]);
      return policy;
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
