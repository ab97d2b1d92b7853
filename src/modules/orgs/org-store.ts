import { randomUUID } from 'node:crypto';
import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, DatabaseClient, Sql } from '../../data/database.js';
import { Prisma, type ApiKey, type Member, type MemberRole, type Organization, type Plan } from '../../generated/prisma/client.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { GENESIS_HASH, type AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents, auditEventsArgument } from '../audit/audit-store.js';
import { MEMBER_COLUMNS } from '../members/member-columns.js';
import type { KeyOwner } from './key-owner-schema.js';
import { API_KEY_COLUMNS, ORGANIZATION_COLUMNS } from './org-columns.js';
import { SCOPES, type Scope } from './tenant.js';

export type { ApiKey };

/**
 * What authentication needs of a key: its owner, whether its principal is unknown (see
 * ApiKeyListing), and its organization's plan in the same query.
 */
export type KeyGrant = Pick<ApiKey, 'id' | 'orgId' | 'scopes' | 'revokedAt' | 'ownerType' | 'ownerId'> &
  Pick<Organization, 'plan'> & { principalUnknown: boolean };

/**
 * A key as listed: with whether its principal is unknown, its own owner (`ownerUnknown`) or, for a
 * key made by such a key, its owner key's (docs/members-and-channels.md#keys-made-before-owners).
 */
export type ApiKeyListing = ApiKey & { principalUnknown: boolean };

/** Whose a key is, once an operator has said so (key:attribute): a member's (by email), or a service key. */
export type Attribution = { kind: 'member'; email: string } | { kind: 'service' };

/**
 * What attributing a key came to: the keys whose owner it set (the key, and for a member the keys
 * it made, which are the member's too), or why not.
 */
export type AttributionOutcome =
  | { kind: 'attributed'; keys: ApiKey[] }
  | { kind: 'not_found' }
  | { kind: 'no_member' }
  | { kind: 'already_attributed'; key: ApiKey; ownerKey: ApiKey | null }
  | { kind: 'beyond_role'; role: MemberRole; beyond: { key: ApiKey; scopes: string[] }[] };

/** A grant with the digest it was read by, to hand each read its own. */
type KeyGrantRow = KeyGrant & { keyHash: Buffer };

const KEY_GRANT_COLUMNS = selectList({
  ...pickColumns(qualified('k', API_KEY_COLUMNS), ['keyHash', 'id', 'orgId', 'scopes', 'revokedAt', 'ownerType', 'ownerId']),
  ...pickColumns(qualified('o', ORGANIZATION_COLUMNS), ['plan']),
  principalUnknown: `k.${API_KEY_COLUMNS.ownerUnknown} OR coalesce(maker.${API_KEY_COLUMNS.ownerUnknown}, false)`,
} satisfies ColumnMap<KeyGrantRow>);

const ORGANIZATION_SELECT = selectList(ORGANIZATION_COLUMNS);
const API_KEY_SELECT = selectList(API_KEY_COLUMNS);

const MEMBER_ROLE = Prisma.raw(selectList(pickColumns(MEMBER_COLUMNS, ['role'])));
const MEMBER_ID_AND_ROLE = Prisma.raw(selectList(pickColumns(MEMBER_COLUMNS, ['id', 'role'])));
const KEY_ID = Prisma.raw(selectList(pickColumns(API_KEY_COLUMNS, ['id'])));

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
         FROM api_keys k JOIN organizations o ON o.id = k.org_id
         LEFT JOIN api_keys maker ON k.owner_type = 'key' AND maker.id = k.owner_id
         WHERE k.key_hash = ANY($1::bytea[])`,
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

  // The statements the CLI's commands run (org:create, key:create, key:revoke, org:plan, and the
  // organization check of the others) go on the pool, not through Prisma: the first Prisma query of
  // a process loads its query compiler, which is most of a short process's CPU and memory.

  /** The organization is created with the head of its (empty) audit chain, in one statement. */
  async createOrganization(input: { name: string; plan: Plan; adminEmails: string[] }): Promise<Organization> {
    const [org] = await this.sql.query<Organization>(
      'org-create',
      `WITH org AS (
         INSERT INTO organizations (${ORGANIZATION_COLUMNS.id}, ${ORGANIZATION_COLUMNS.name}, ${ORGANIZATION_COLUMNS.plan}, ${ORGANIZATION_COLUMNS.adminEmails})
         VALUES ($1::uuid, $2, $3::"Plan", $4::text[])
         RETURNING ${ORGANIZATION_SELECT}),
       head AS (INSERT INTO audit_chain_heads (org_id, seq, hash) SELECT id, 0, $5 FROM org)
       SELECT * FROM org`,
      [randomUUID(), input.name, input.plan, input.adminEmails, GENESIS_HASH],
    );
    return org!;
  }

  async findOrganization(id: string): Promise<Organization | null> {
    const [org] = await this.sql.query<Organization>(
      'org-find',
      `SELECT ${ORGANIZATION_SELECT} FROM organizations WHERE ${ORGANIZATION_COLUMNS.id} = $1::uuid`,
      [id],
    );
    return org ?? null;
  }

  async setPlan(id: string, plan: Plan): Promise<Organization | null> {
    const [org] = await this.sql.query<Organization>(
      'org-set-plan',
      `UPDATE organizations SET ${ORGANIZATION_COLUMNS.plan} = $2::"Plan" WHERE ${ORGANIZATION_COLUMNS.id} = $1::uuid RETURNING ${ORGANIZATION_SELECT}`,
      [id, plan],
    );
    return org ?? null;
  }

  /**
   * A service key (made by the CLI): its own principal, with no owner, and its audit event, so that
   * every key's creation is on record.
   */
  async createApiKey(input: NewApiKey, event: (key: ApiKey) => AuditEventDraft): Promise<ApiKey> {
    // The whole row is made here, so that its event is written by the same statement.
    const key: ApiKey = {
      ...input,
      id: randomUUID(),
      createdAt: new Date(),
      revokedAt: null,
      ownerType: null,
      ownerId: null,
      ownerUnknown: false,
    };
    await this.sql.query(
      'api-key-create-service',
      `WITH created AS (
         INSERT INTO api_keys (${API_KEY_COLUMNS.id}, ${API_KEY_COLUMNS.orgId}, ${API_KEY_COLUMNS.name}, ${API_KEY_COLUMNS.scopes}, ${API_KEY_COLUMNS.keyHash}, ${API_KEY_COLUMNS.createdAt})
         VALUES ($1::uuid, $2::uuid, $3, $4::text[], $5::bytea, $6::timestamptz)
         RETURNING ${API_KEY_COLUMNS.orgId})
       SELECT ag_append_audit_events(${API_KEY_COLUMNS.orgId}, $7::jsonb) FROM created`,
      [key.id, key.orgId, key.name, key.scopes, Buffer.from(key.keyHash), key.createdAt, auditEventsArgument([event(key)])],
    );
    return key;
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
    const [key] = await this.sql.query<ApiKey>(
      'api-key-revoke',
      `UPDATE api_keys SET ${API_KEY_COLUMNS.revokedAt} = coalesce(${API_KEY_COLUMNS.revokedAt}, $2::timestamptz)
       WHERE ${API_KEY_COLUMNS.id} = $1::uuid RETURNING ${API_KEY_SELECT}`,
      [id, at],
    );
    return key ?? null;
  }

  async listApiKeys(orgId: string): Promise<ApiKeyListing[]> {
    const keys = await this.db.apiKey.findMany({ where: { orgId }, orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
    const unknown = new Set(keys.filter((key) => key.ownerUnknown).map((key) => key.id));
    return keys.map((key) => ({
      ...key,
      principalUnknown: key.ownerUnknown || (key.ownerType === 'key' && key.ownerId !== null && unknown.has(key.ownerId)),
    }));
  }

  /**
   * Gives a key whose owner is unknown its owner, with an audit event per key whose owner it set:
   * a member's key under a share lock on the member's row (as createOwnedApiKey), asking
   * `beyondRole` of the role read under it for every live key that becomes theirs; a removal or role change
   * running at the same time then sees the keys as the member's. The key's row is locked, so two
   * attributions of one key are one after the other, and the second finds it attributed.
   */
  attributeApiKey(
    orgId: string,
    id: string,
    attribution: Attribution,
    beyondRole: (role: MemberRole, scopes: string[]) => string[],
    event: (key: ApiKey) => AuditEventDraft,
  ): Promise<AttributionOutcome> {
    return this.db.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<Pick<ApiKey, 'id'>[]>`
        SELECT ${KEY_ID} FROM api_keys WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid FOR UPDATE`;
      if (!locked) return { kind: 'not_found' as const };
      const key = await tx.apiKey.findUniqueOrThrow({ where: { id } });
      if (!key.ownerUnknown) {
        const ownerKey = key.ownerType === 'key' && key.ownerId ? await tx.apiKey.findUnique({ where: { id: key.ownerId } }) : null;
        return { kind: 'already_attributed' as const, key, ownerKey };
      }
      if (attribution.kind === 'service') {
        const attributed = await tx.apiKey.update({ where: { id }, data: { ownerUnknown: false } });
        await appendAuditEvents(tx, orgId, [event(attributed)]);
        return { kind: 'attributed' as const, keys: [attributed] };
      }
      const [member] = await tx.$queryRaw<Pick<Member, 'id' | 'role'>[]>`
        SELECT ${MEMBER_ID_AND_ROLE} FROM members WHERE org_id = ${orgId}::uuid AND email_key = ${attribution.email.toLowerCase()} FOR SHARE`;
      if (!member) return { kind: 'no_member' as const };
      // The keys it made belong to its principal (stored flattened, see ag_principal_of): the member's now.
      const made = await tx.apiKey.findMany({ where: { orgId, ownerType: 'key', ownerId: id }, orderBy: { createdAt: 'asc' } });
      const beyond = [key, ...made]
        .filter((candidate) => candidate.revokedAt === null)
        .map((candidate) => ({ key: candidate, scopes: beyondRole(member.role, candidate.scopes) }))
        .filter((candidate) => candidate.scopes.length > 0);
      if (beyond.length > 0) return { kind: 'beyond_role' as const, role: member.role, beyond };
      const owner = { ownerUnknown: false, ownerType: 'user' as const, ownerId: member.id };
      const attributed = await tx.apiKey.update({ where: { id }, data: owner });
      const followers = await tx.apiKey.updateManyAndReturn({ where: { id: { in: made.map((child) => child.id) } }, data: owner });
      const keys = [attributed, ...followers];
      await appendAuditEvents(tx, orgId, keys.map(event));
      return { kind: 'attributed' as const, keys };
    });
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
