import type { DataLayer } from '../../data/database.js';
import { ConflictError, ForbiddenError, KeyUnattributedError, NotFoundError, UnauthorizedError } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import type { Actor } from '../audit/audit-events.js';
import { attributeCommand, generateApiKey, hashApiKey, keyEvent, keyOwnerOf, looksLikeApiKey } from './api-keys.js';
import { OrgStore, type ApiKeyListing, type Attribution } from './org-store.js';
import type { ApiKeyCreateInput, ApiKeyView } from './key-schemas.js';
import type { KeyOwner } from './key-owner-schema.js';
import { ROLE_SCOPES, type Plan, type Scope, type Tenant } from './tenant.js';

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

  /**
   * Creates a service key (the CLI's, the demo's), audited with `actor` as its maker; the returned
   * `key` is the only time the secret exists outside the caller.
   */
  async createApiKey(input: { orgId: string; scopes: Scope[]; name?: string }, actor: Actor): Promise<{ id: string; key: string }> {
    await this.requireOrganization(input.orgId);
    const key = generateApiKey();
    const apiKey = await this.store.createApiKey(
      { orgId: input.orgId, name: input.name ?? null, scopes: [...new Set(input.scopes)], keyHash: hashApiKey(key) },
      (created) => keyEvent('key.created', actor, created),
    );
    return { id: apiKey.id, key };
  }

  /**
   * Gives a key whose owner is unknown (docs/members-and-channels.md#keys-made-before-owners) its
   * owner: a member, who then owns the keys it made too, or none (a service key). Refused for a key
   * whose owner is known, and for a member whose role lacks a scope of a live key that would be
   * theirs (revoke that key, or give the member the role, first). Returns the keys it attributed.
   */
  async attributeApiKey(orgId: string, id: string, attribution: Attribution, actor: Actor): Promise<{ keys: ApiKeyView[] }> {
    await this.requireOrganization(orgId);
    const outcome = isUuid(id)
      ? await this.store.attributeApiKey(
          orgId,
          id,
          attribution,
          (role, scopes) => scopes.filter((scope) => !ROLE_SCOPES[role].has(scope as Scope)),
          (key) => keyEvent('key.attributed', actor, key),
        )
      : { kind: 'not_found' as const };
    switch (outcome.kind) {
      case 'attributed':
        return { keys: outcome.keys.map((key) => toApiKeyView({ ...key, principalUnknown: false })) };
      case 'not_found':
        throw new NotFoundError(`No API key with id '${id}' exists in organization ${orgId}.`);
      case 'no_member':
        throw new NotFoundError(
          `Organization ${orgId} has no member with the email '${attribution.kind === 'member' ? attribution.email : ''}'.`,
        );
      case 'already_attributed': {
        const { key, ownerKey } = outcome;
        if (ownerKey?.ownerUnknown) {
          throw new ConflictError(
            `API key ${id} was made by API key ${ownerKey.id}, whose owner is unknown: attribute that key, and this one follows it.`,
          );
        }
        const owner = keyOwnerOf(key);
        throw new ConflictError(
          `API key ${id} already has its owner (${owner ? `${owner.type} ${owner.id}` : 'none: a service key'}); only a key whose owner is unknown can be attributed.`,
        );
      }
      case 'beyond_role':
        throw new ForbiddenError(
          `The member's ${outcome.role} role lacks scopes of keys that would be theirs: ` +
            outcome.beyond.map(({ key, scopes }) => `${key.id} (${scopes.join(', ')})`).join('; ') +
            '. Revoke those keys (key:revoke), or give the member a role holding those scopes, first.',
        );
    }
  }

  async revokeApiKey(id: string): Promise<{ id: string; revokedAt: string }> {
    const apiKey = isUuid(id) ? await this.store.revokeApiKey(id, new Date()) : null;
    if (!apiKey?.revokedAt) throw new NotFoundError(`No API key with id '${id}' exists.`);
    return { id: apiKey.id, revokedAt: apiKey.revokedAt.toISOString() };
  }

  async listApiKeys(tenant: Tenant): Promise<ApiKeyView[]> {
    return (await this.store.listApiKeys(tenant.orgId)).map(toApiKeyView);
  }

  /**
   * A key for the caller's organization, with no scope the caller does not hold itself, belonging
   * to the caller's principal (see keyOwnerFor). A member's key never holds a scope their role
   * lacks, also when the role changed since the caller authenticated.
   */
  async createApiKeyFor(tenant: Tenant, input: ApiKeyCreateInput): Promise<{ key: ApiKeyView; secret: string }> {
    const { principal } = tenant;
    if (principal.type === 'api_key' && principal.ownerUnknown) {
      // Its key would belong to the same unknown principal: refused rather than adding to what must be attributed.
      throw new KeyUnattributedError(
        `Nobody knows whose this API key is (it, or the key that made it, dates from before keys had owners), so the key it would make would be nobody's known either. ` +
          `An operator gives it its owner with \`npm run cli -- ${attributeCommand(tenant.orgId, principal.owner?.id ?? principal.keyId)}\` ` +
          '(docs/members-and-channels.md#keys-made-before-owners); until then, make keys in the console or with a key of your own.',
      );
    }
    const beyond = input.scopes.filter((scope) => !tenant.scopes.has(scope));
    if (beyond.length > 0) throw new ForbiddenError(`You cannot grant scopes you do not hold: ${beyond.join(', ')}.`);
    const secret = generateApiKey();
    const owner = keyOwnerFor(tenant);
    const outcome = await this.store.createOwnedApiKey(
      { orgId: tenant.orgId, name: input.name ?? null, scopes: input.scopes, keyHash: hashApiKey(secret), owner },
      (role) => input.scopes.every((scope) => ROLE_SCOPES[role].has(scope)),
      (key) => keyEvent('key.created', tenant.actor, key),
    );
    if (outcome.kind === 'owner_removed') throw new UnauthorizedError('The member this key would belong to has been removed.');
    if (outcome.kind === 'beyond_role') {
      throw new ForbiddenError(`The ${outcome.role} role of the member this key would belong to does not hold every scope asked for.`);
    }
    return { key: toApiKeyView({ ...outcome.key, principalUnknown: false }), secret };
  }

  /** Revokes a key of the caller's organization, audited; another organization's id is not found. */
  async revokeApiKeyOf(tenant: Tenant, id: string): Promise<void> {
    const revoked = await this.store.revokeOrgApiKey(tenant.orgId, id, new Date(), (key) => keyEvent('key.revoked', tenant.actor, key));
    if (!revoked) throw new NotFoundError(`No API key with id '${id}' exists.`);
  }

  /** The tenant a presented key acts for, or null for an unknown, malformed or revoked key. */
  async authenticate(presentedKey: string): Promise<Tenant | null> {
    if (!looksLikeApiKey(presentedKey)) return null;
    const grant = await this.store.findKeyGrant(hashApiKey(presentedKey));
    if (!grant || grant.revokedAt) return null;
    const owner = keyOwnerOf(grant);
    return {
      orgId: grant.orgId,
      plan: grant.plan,
      scopes: scopeSet(grant.scopes),
      actor: { type: 'api_key', id: grant.id, ...(owner ? { owner } : {}) },
      principal: { type: 'api_key', keyId: grant.id, owner, ownerUnknown: grant.principalUnknown },
    };
  }
}

/**
 * Whose a key the caller makes is (docs/members-and-channels.md#principals): the member of a
 * session; for a key, that key's own principal, flattened: its owner, or itself when it is a
 * service key. So a key made by a member's key is the member's, never the making key's.
 */
function keyOwnerFor(tenant: Tenant): KeyOwner {
  const { principal } = tenant;
  if (principal.type === 'session') return { type: 'user', id: principal.memberId };
  return principal.owner ?? { type: 'key', id: principal.keyId };
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

function toApiKeyView(key: ApiKeyListing): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes as ApiKeyView['scopes'],
    owner: keyOwnerOf(key),
    ownerUnknown: key.principalUnknown,
    createdAt: key.createdAt.toISOString(),
    revokedAt: key.revokedAt?.toISOString() ?? null,
  };
}
