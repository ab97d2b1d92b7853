import type { Database } from '../../data/database.js';
import type { ApiKey, Organization, Plan } from '../../generated/prisma/client.js';
import { GENESIS_HASH } from '../audit/audit-events.js';

export type ApiKeyWithPlan = ApiKey & { org: Pick<Organization, 'plan'> };

/** Organizations and their API keys: the only store that is not scoped to one organization. */
export class OrgStore {
  constructor(private readonly db: Database) {}

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

  findApiKeyByHash(keyHash: Uint8Array<ArrayBuffer>): Promise<ApiKeyWithPlan | null> {
    return this.db.apiKey.findUnique({ where: { keyHash }, include: { org: { select: { plan: true } } } });
  }
}
