import type { Database, Sql } from '../../data/database.js';
import type { ApiKey, Organization, Plan } from '../../generated/prisma/client.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { GENESIS_HASH } from '../audit/audit-events.js';

/** What authentication needs of a key: its organization's plan comes along in the same query. */
export type KeyGrant = Pick<ApiKey, 'id' | 'orgId' | 'scopes' | 'revokedAt'> & Pick<Organization, 'plan'>;

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
      const rows = await this.sql.query<KeyGrant & { keyHash: Buffer }>(
        'key-grants',
        `SELECT k.key_hash AS "keyHash", k.id, k.org_id AS "orgId", k.scopes, k.revoked_at AS "revokedAt", o.plan
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

  createApiKey(input: { orgId: string; name: string | null; scopes: string[]; keyHash: Uint8Array<ArrayBuffer> }): Promise<ApiKey> {
    return this.db.apiKey.create({ data: input });
  }

  /** Revokes the key; null when no key has that id. Revoking twice keeps the first time. */
  async revokeApiKey(id: string, at: Date): Promise<ApiKey | null> {
    await this.db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
    return this.db.apiKey.findUnique({ where: { id } });
  }

  listApiKeys(orgId: string): Promise<ApiKey[]> {
    return this.db.apiKey.findMany({ where: { orgId }, orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
  }

  /** Revokes a key of the organization, keeping the first revocation time; false when it has no such key. */
  async revokeOrgApiKey(orgId: string, id: string, at: Date): Promise<boolean> {
    await this.db.apiKey.updateMany({ where: { id, orgId, revokedAt: null }, data: { revokedAt: at } });
    return (await this.db.apiKey.count({ where: { id, orgId } })) > 0;
  }

  /** Runs on every request: one prepared statement joining the plan, shared by the reads that arrive together. */
  findKeyGrant(keyHash: Uint8Array<ArrayBuffer>): Promise<KeyGrant | null> {
    return this.keyGrants.submit(Buffer.from(keyHash));
  }
}
