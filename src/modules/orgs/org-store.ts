import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, DatabaseClient, Sql } from '../../data/database.js';
import { Prisma, type ApiKey, type Member, type MemberRole, type Organization, type Plan } from '../../generated/prisma/client.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { GENESIS_HASH, type AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import { MEMBER_COLUMNS } from '../members/member-columns.js';
import type { KeyOwner } from './key-owner-schema.js';
import { API_KEY_COLUMNS, ORGANIZATION_COLUMNS } from './org-columns.js';
import { SCOPES, type Scope } from './tenant.js';

export type { ApiKey };

/** What authentication needs of a key: its owner, and its organization's plan in the same query. */
export type KeyGrant = Pick<ApiKey, 'id' | 'orgId' | 'scopes' | 'revokedAt' | 'ownerType' | 'ownerId'> & Pick<Organization, 'plan'>;

/** A grant with the digest it was read by, to hand each read its own. */
type KeyGrantRow = KeyGrant & { keyHash: Buffer };

const KEY_GRANT_COLUMNS = selectList({
  ...pickColumns(qualified('k', API_KEY_COLUMNS), ['keyHash', 'id', 'orgId', 'scopes', 'revokedAt', 'ownerType', 'ownerId']),
  ...pickColumns(qualified('o', ORGANIZATION_COLUMNS), ['plan']),
} satisfies ColumnMap<KeyGrantRow>);

const MEMBER_ROLE = Prisma.raw(selectList(pickColumns(MEMBER_COLUMNS, ['role'])));

/** A key to store: only the digest of its secret. */
export interface NewApiKey {
  orgId: string;
  name: string | null;
  scopes: string[];
  keyHash: Uint8Array<ArrayBuffer>;
}

/**
 * What making a key with an owner came to: the key, or for a member's key, that the member was
 * removed meanwhile or now holds a role without every scope asked.
 */
export type OwnedKeyOutcome = { kind: 'created'; key: ApiKey } | { kind: 'owner_removed' } | { kind: 'beyond_role'; role: MemberRole };

/** Organizations and their API keys: the only store that is not scoped to one organization. */
export class OrgStore {
  /**
   * Every request reads its key's grant: reads that arrive while the previous one runs share the
   * next statement (up to 200), so a burst of requests does not queue a query each on the pool.
   * One statement at a time: with four, most reads went alone, a round trip each, which cost
   * creations more CPU per request.
   */
  private readonly keyGrants = new GroupCommit<Buffer, KeyGrant | null>(
    async (hashes) => {
      const rows = await this.sql.query<KeyGrantRow>(
        'key-grants',
        `SELECT ${KEY_GRANT_COLUMNS}
         FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.key_hash = ANY($1::bytea[])`,
        [hashes],
      );
      const byHash = new Map(rows.map(({ keyHash, ...grant }) => [keyHash.toString('hex'), grant]));
      return hashes.map((hash) => byHash.get(hash.toString('hex')) ?? null);
    },
    { maxBatch: 200, maxInFlight: 1 },
  );

  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
  ) {}

  /** The organization is created with the head of its (empty) audit chain. */
  createOrganization(input: { name: string; plan: Plan; adminEmails: string[] }): Promise<Organization> {
    return this.db.organization.create({
      data: { ...input, chainHead: { create: { seq: 0n, hash: GENESIS_HASH } } },
    });
  }

  findOrganization(id: string): Promise<Organization | null> {
    return this.db.organization.findUnique({ where: { id } });
  }

  async setPlan(id: string, plan: Plan): Promise<Organization | null> {
    const { count } = await this.db.organization.updateMany({ where: { id }, data: { plan } });
    return count === 0 ? null : this.findOrganization(id);
  }

  /** A service key (made by the CLI): its own principal, with no owner. */
  createApiKey(input: NewApiKey): Promise<ApiKey> {
    return this.db.apiKey.create({ data: input });
  }

  /**
   * A key with an owner (made with POST /v1/keys), with its audit event. A member's key is made
   * under a share lock on the member's row, asking `mayHold` of the role read under it: a removal
   * or role change running at the same time either waits for this key and then revokes it, or
   * commits first and this creation sees the member as they now are.
   */
  createOwnedApiKey(
    input: NewApiKey & { owner: KeyOwner },
    mayHold: (role: MemberRole) => boolean,
    event: (key: ApiKey) => AuditEventDraft,
  ): Promise<OwnedKeyOutcome> {
    const { owner, ...key } = input;
    return this.db.$transaction(async (tx) => {
      if (owner.type === 'user') {
        const [member] = await tx.$queryRaw<Pick<Member, 'role'>[]>`
          SELECT ${MEMBER_ROLE} FROM members WHERE id = ${owner.id}::uuid AND org_id = ${key.orgId}::uuid FOR SHARE`;
        if (!member) return { kind: 'owner_removed' as const };
        if (!mayHold(member.role)) return { kind: 'beyond_role' as const, role: member.role };
      }
      const created = await tx.apiKey.create({ data: { ...key, ownerType: owner.type, ownerId: owner.id } });
      await appendAuditEvents(tx, key.orgId, [event(created)]);
      return { kind: 'created' as const, key: created };
    });
  }

  /** Revokes the key; null when no key has that id. Revoking twice keeps the first time. */
  async revokeApiKey(id: string, at: Date): Promise<ApiKey | null> {
    await this.db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
    return this.db.apiKey.findUnique({ where: { id } });
  }

  listApiKeys(orgId: string): Promise<ApiKey[]> {
    return this.db.apiKey.findMany({ where: { orgId }, orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
  }

  /**
   * Revokes a key of the organization with its audit event, keeping the first revocation time
   * (and writing no event again); false when it has no such key.
   */
  revokeOrgApiKey(orgId: string, id: string, at: Date, event: (key: ApiKey) => AuditEventDraft): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const [revoked] = await tx.apiKey.updateManyAndReturn({ where: { id, orgId, revokedAt: null }, data: { revokedAt: at } });
      if (revoked) {
        await appendAuditEvents(tx, orgId, [event(revoked)]);
        return true;
      }
      return (await tx.apiKey.count({ where: { id, orgId } })) > 0;
    });
  }

  /** Runs on every request: one prepared statement joining the plan, shared by the reads that arrive together. */
  findKeyGrant(keyHash: Uint8Array<ArrayBuffer>): Promise<KeyGrant | null> {
    return this.keyGrants.submit(Buffer.from(keyHash));
  }
}

/**
 * Revokes the live keys a member owns, within the caller's transaction: all of them (`keep` null),
 * or those with a scope outside `keep` (the scopes of the member's new role). Run it after the
 * member's row is changed, so that a key being made for the member meanwhile (which holds a share
 * lock on that row, see createOwnedApiKey) has committed and is revoked too.
 */
export function revokeMemberKeys(
  tx: DatabaseClient,
  orgId: string,
  memberId: string,
  keep: readonly Scope[] | null,
  at: Date,
): Promise<ApiKey[]> {
  return tx.apiKey.updateManyAndReturn({
    where: {
      orgId,
      ownerType: 'user',
      ownerId: memberId,
      revokedAt: null,
      ...(keep ? { scopes: { hasSome: SCOPES.filter((scope) => !keep.includes(scope)) } } : {}),
    },
    data: { revokedAt: at },
  });
}
