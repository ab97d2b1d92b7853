import type { DataLayer } from '../../data/database.js';
import { ForbiddenError, NotFoundError } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { generateApiKey, hashApiKey, looksLikeApiKey } from './api-keys.js';
import { OrgStore } from './org-store.js';
import type { ApiKeyCreateInput, ApiKeyView } from './key-schemas.js';
import type { Plan, Scope, Tenant } from './tenant.js';

export class OrgService {
  private readonly store: OrgStore;

  constructor(data: Pick<DataLayer, 'db' | 'sql'>) {
    this.store = new OrgStore(data.db, data.sql);
  }

  async createOrganization(input: { name: string; plan: Plan; adminEmails: string[] }): Promise<{ orgId: string }> {
    const org = await this.store.createOrganization(input);
    return { orgId: org.id };
  }

  async setPlan(orgId: string, plan: Plan): Promise<{ orgId: string; plan: Plan }> {
    const org = isUuid(orgId) ? await this.store.setPlan(orgId, plan) : null;
    if (!org) throw new NotFoundError(`No organization with id '${orgId}' exists.`);
    return { orgId: org.id, plan: org.plan };
  }

  async requireOrganization(orgId: string): Promise<void> {
    if (!isUuid(orgId) || !(await this.store.findOrganization(orgId)))
      throw new NotFoundError(`No organization with id '${orgId}' exists.`);
  }

  /** Creates a key; the returned `key` is the only time the secret exists outside the caller. */
  async createApiKey(input: { orgId: string; scopes: Scope[]; name?: string }): Promise<{ id: string; key: string }> {
    await this.requireOrganization(input.orgId);
    const key = generateApiKey();
    const apiKey = await this.store.createApiKey({
      orgId: input.orgId,
      name: input.name ?? null,
      scopes: [...new Set(input.scopes)],
      keyHash: hashApiKey(key),
    });
    return { id: apiKey.id, key };
  }

  async revokeApiKey(id: string): Promise<{ id: string; revokedAt: string }> {
    const apiKey = isUuid(id) ? await this.store.revokeApiKey(id, new Date()) : null;
    if (!apiKey?.revokedAt) throw new NotFoundError(`No API key with id '${id}' exists.`);
    return { id: apiKey.id, revokedAt: apiKey.revokedAt.toISOString() };
  }

  async listApiKeys(tenant: Tenant): Promise<ApiKeyView[]> {
    return (await this.store.listApiKeys(tenant.orgId)).map(toApiKeyView);
  }

  /** A key for the caller's organization, with no scope the caller does not hold itself. */
  async createApiKeyFor(tenant: Tenant, input: ApiKeyCreateInput): Promise<{ key: ApiKeyView; secret: string }> {
    const beyond = input.scopes.filter((scope) => !tenant.scopes.has(scope));
    if (beyond.length > 0) throw new ForbiddenError(`You cannot grant scopes you do not hold: ${beyond.join(', ')}.`);
    const secret = generateApiKey();
    const created = await this.store.createApiKey({
      orgId: tenant.orgId,
      name: input.name ?? null,
      scopes: input.scopes,
      keyHash: hashApiKey(secret),
    });
    return { key: toApiKeyView(created), secret };
  }

  /** Revokes a key of the caller's organization; another organization's id is not found. */
  async revokeApiKeyOf(tenant: Tenant, id: string): Promise<void> {
    if (!(await this.store.revokeOrgApiKey(tenant.orgId, id, new Date()))) throw new NotFoundError(`No API key with id '${id}' exists.`);
  }

  /** The tenant a presented key acts for, or null for an unknown, malformed or revoked key. */
  async authenticate(presentedKey: string): Promise<Tenant | null> {
    if (!looksLikeApiKey(presentedKey)) return null;
    const grant = await this.store.findKeyGrant(hashApiKey(presentedKey));
    if (!grant || grant.revokedAt) return null;
    return {
      orgId: grant.orgId,
      plan: grant.plan,
      scopes: scopeSet(grant.scopes),
      actor: { type: 'api_key', id: grant.id },
      principal: { type: 'api_key', keyId: grant.id },
    };
  }
}

/**
 * Scope sets shared by every request with the same scopes (at most one per combination in use),
 * frozen: a set that changed would change what every key holding it may do.
 */
const scopeSets = new Map<string, ReadonlySet<string>>();

function scopeSet(scopes: readonly string[]): ReadonlySet<string> {
  const key = [...scopes].sort().join(' ');
  let set = scopeSets.get(key);
  if (!set) scopeSets.set(key, (set = frozenSet(scopes)));
  return set;
}

function frozenSet<T>(values: readonly T[]): ReadonlySet<T> {
  const set = new Set(values);
  const refuse = () => {
    throw new TypeError('a shared scope set cannot change');
  };
  return Object.freeze(Object.assign(set, { add: refuse, delete: refuse, clear: refuse }));
}

function toApiKeyView(key: { id: string; name: string | null; scopes: string[]; createdAt: Date; revokedAt: Date | null }): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes as ApiKeyView['scopes'],
    createdAt: key.createdAt.toISOString(),
    revokedAt: key.revokedAt?.toISOString() ?? null,
  };
}
