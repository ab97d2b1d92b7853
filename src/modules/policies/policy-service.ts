import type { DataLayer } from '../../data/database.js';
import type { Reads } from '../../data/read-replica.js';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.js';
import { limitReached } from '../orgs/org-limits.js';
import { principalKey, type Tenant } from '../orgs/tenant.js';
import { checkPolicyRules, evaluatePolicies, evaluatePolicy, type RuleInput } from './policy-rules.js';
import {
  publicPolicyDocument,
  type PolicyDocument,
  type PolicyEvaluation,
  type PolicyEvaluationInput,
  type PolicyListQuery,
  type PolicyReadQuery,
  type PolicyReplay,
  type PolicyReplayInput,
  type PolicyVersionListQuery,
  type PolicyVersionView,
  type PolicyView,
  type PublicPolicyDocument,
  type ShadowSummary,
} from './policy-schemas.js';
import { MAX_SHADOW_EXAMPLES } from './policy-schemas.js';
import { PolicyStore, type Policy, type PolicyVersion } from './policy-store.js';

/** A policy as some read saw it: its document (null when none exists), the revision and the version it had. */
export interface PolicySnapshot {
  document: PolicyDocument | null;
  /** Renewed by every write; null when no policy exists under the key. */
  revision: string | null;
  version: number | null;
}

const SNAPSHOT_LIMIT = 10_000;

/** Examples a replay gives of each change. */
const MAX_REPLAY_EXAMPLES = 20;

export class PolicyService {
  /**
   * Policies as this process last read them. Only a guess: the transaction that creates an
   * approval checks that the revision it was evaluated against is still the stored one (see
   * ag_create_approval), so a stale entry costs a re-read, never a wrong outcome.
   */
  private readonly snapshots = new Map<string, PolicySnapshot>();

  constructor(private readonly data: Pick<DataLayer, 'db' | 'sql'> & { reads: Reads }) {}

  private store(tenant: Pick<Tenant, 'orgId'>): PolicyStore {
    return new PolicyStore(this.data.db, this.data.sql, tenant.orgId);
  }

  /** The policy under `key` as last read by this process, or read now when unknown or `fresh`. */
  async snapshot(orgId: string, key: string, { fresh }: { fresh: boolean }): Promise<PolicySnapshot> {
    // Organization ids are fixed-length UUIDs, so this key cannot be ambiguous.
    const cacheKey = `${orgId}${key}`;
    const known = fresh ? undefined : this.snapshots.get(cacheKey);
    if (known) return known;
    const policy = await this.store({ orgId }).find(key);
    const snapshot = { document: policy && toDocument(policy), revision: policy?.revision ?? null, version: policy?.version ?? null };
    if (this.snapshots.size >= SNAPSHOT_LIMIT) this.snapshots.clear();
    this.snapshots.set(cacheKey, snapshot);
    return snapshot;
  }

  /** The current policy under `key`, or the version named (kept also after a DELETE). */
  async get(tenant: Tenant, key: string, { version }: PolicyReadQuery = {}): Promise<PolicyView | PolicyVersionView> {
    if (version === undefined) return toView(await this.require(tenant, key));
    const stored = await this.store(tenant).findVersion(key, version);
    if (!stored) throw new NotFoundError(`Policy '${key}' has no version ${version}.`);
    return toVersionView(stored);
  }

  /** The versions under `key`, newest first, a page at a time; 404 when no PUT ever stored one. */
  async versions(
    tenant: Tenant,
    key: string,
    { limit, cursor }: PolicyVersionListQuery,
  ): Promise<{ versions: PolicyVersionView[]; nextCursor: string | null }> {
    const before = cursor === undefined ? undefined : decodeVersionCursor(cursor);
    if (before === null) throw new ValidationError([{ path: 'cursor', message: 'cursor is not one this API gave out' }]);
    const rows = await this.store(tenant).listVersions(key, { ...(before === undefined ? {} : { before }), limit: limit + 1 });
    if (rows.length === 0 && before === undefined) throw new NotFoundError(`No policy with key '${key}' was ever stored.`);
    const page = rows.slice(0, limit);
    return { versions: page.map(toVersionView), nextCursor: rows.length > limit ? encodeVersionCursor(page.at(-1)!.version) : null };
  }

  private async require(tenant: Tenant, key: string): Promise<Policy> {
    const policy = await this.store(tenant).find(key);
    if (!policy) throw new NotFoundError(`No policy with key '${key}' exists.`);
    return policy;
  }

  /** A page of the organization's policies by key (see docs/policies.md). */
  async list(tenant: Tenant, { limit, cursor }: PolicyListQuery): Promise<{ policies: PolicyView[]; nextCursor: string | null }> {
    const after = cursor === undefined ? undefined : decodePolicyCursor(cursor);
    if (after === null) throw new ValidationError([{ path: 'cursor', message: 'cursor is not one this API gave out' }]);
    // One more than the page: whether there is a next page without a second query.
    const rows = await this.store(tenant).list({ ...(after === undefined ? {} : { after }), limit: limit + 1 });
    const page = rows.slice(0, limit);
    return { policies: page.map(toView), nextCursor: rows.length > limit ? encodePolicyCursor(page.at(-1)!.key) : null };
  }

  /**
   * Rules are compiled before anything is stored, so a bad expression never reaches evaluation;
   * `escalateTo` must name a policy that exists (or this one), so a timeout never hands a request
   * to a key nobody defined.
   */
  async put(tenant: Tenant, key: string, document: PolicyDocument): Promise<PolicyView> {
    await assertRulesCompile(document, '', tenant.orgId);
    if (document.shadow) await assertRulesCompile(document.shadow, 'shadow.', tenant.orgId);
    if (document.remindEverySeconds !== null && document.remindAfterSeconds === null) {
      const message = 'remindEverySeconds repeats a reminder: set remindAfterSeconds for the first one too';
      throw new ValidationError([{ path: 'remindEverySeconds', message }], message);
    }
    const policy = await this.store(tenant).upsert(key, document, {
      type: 'policy.updated',
      actor: tenant.actor,
      data: { policyKey: key, policy: publicPolicyDocument(document) },
      createdAt: new Date(),
    });
    if (policy === 'limit_reached') throw limitReached('policies');
    if (policy === 'unknown_escalation_target') {
      const message = `escalateTo must be the key of an existing policy of this organization; no policy '${document.escalateTo}' exists (create it first)`;
      throw new ValidationError([{ path: 'escalateTo', message }], message);
    }
    return toView(policy);
  }

  /**
   * What the stored policy under `key`, or the draft given, would say of a request: the same
   * evaluation as creation runs, with nothing created and nothing audited.
   */
  async evaluate(tenant: Tenant, key: string, { policy: draft, ...request }: PolicyEvaluationInput): Promise<PolicyEvaluation> {
    let document = draft;
    if (document) await assertRulesCompile(document, 'policy.', tenant.orgId);
    else document = toDocument(await this.require(tenant, key));
    const verdict = await evaluatePolicy(
      document,
      { ...request, agent: request.agent ?? null, context: request.context ?? null },
      tenant.orgId,
    );
    return { outcome: verdict.outcome, matchedRule: verdict.matchedRule, error: verdict.error ?? null };
  }

  /**
   * What the draft, or the current version, would have said of the requests stored under `key`
   * (see docs/policies.md#replay): each evaluated again by the bounded evaluator on the pool's
   * workers, compared with what was recorded. Creates and changes nothing.
   */
  async replay(tenant: Tenant, key: string, { policy: draft, from, to, limit }: PolicyReplayInput): Promise<PolicyReplay> {
    let document = draft;
    if (document) await assertRulesCompile(document, 'policy.', tenant.orgId);
    else document = toDocument(await this.require(tenant, key));
    // History is read from the replica when one is fresh (docs/operations.md#read-replica): a replay
    // of 10,000 requests is the kind of read that belongs there.
    const history = new PolicyStore(this.data.db, await this.data.reads.sqlFor(principalKey(tenant.principal)), tenant.orgId);
    const requests = await history.storedRequests(key, { from, to, limit });
    const verdicts = await evaluatePolicies(
      document,
      requests.map(({ action, payload, agent, context }) => ({
        action,
        payload: payload as RuleInput['payload'],
        agent,
        context: context as RuleInput['context'],
      })),
      tenant.orgId,
    );
    const changes = new Map<string, PolicyReplay['changed'][number]>();
    const examples: PolicyReplay['examples'] = [];
    for (const [index, request] of requests.entries()) {
      const verdict = verdicts[index]!;
      if (verdict.outcome === request.policyOutcome) continue;
      const change = `${request.policyOutcome}>${verdict.outcome}`;
      const counted = changes.get(change) ?? { from: request.policyOutcome, to: verdict.outcome, count: 0 };
      changes.set(change, { ...counted, count: counted.count + 1 });
      if (counted.count < MAX_REPLAY_EXAMPLES) {
        examples.push({
          approvalId: request.id,
          was: request.policyOutcome,
          would: verdict.outcome,
          matchedRule: verdict.matchedRule,
          error: verdict.error ?? null,
        });
      }
    }
    const changed = [...changes.values()];
    return {
      evaluated: requests.length,
      unchanged: requests.length - changed.reduce((sum, change) => sum + change.count, 0),
      changed,
      examples,
    };
  }

  /** How the current shadow of `key` compares with the live policy (see docs/policies.md#shadow-policies). */
  async shadowSummary(tenant: Tenant, key: string): Promise<ShadowSummary> {
    const policy = await this.require(tenant, key);
    if (!policy.shadowSince) return { since: null, evaluated: 0, agreed: 0, disagreed: [] };
    const store = this.store(tenant);
    const [tallies, disagreements] = await Promise.all([
      store.shadowTallies(key, policy.shadowSince),
      store.shadowDisagreements(key, policy.shadowSince, MAX_SHADOW_EXAMPLES),
    ]);
    const agreed = tallies.filter((tally) => tally.live === tally.shadow).reduce((sum, tally) => sum + tally.count, 0);
    return {
      since: policy.shadowSince.toISOString(),
      evaluated: tallies.reduce((sum, tally) => sum + tally.count, 0),
      agreed,
      disagreed: tallies
        .filter((tally) => tally.live !== tally.shadow)
        .map((tally) => ({
          ...tally,
          examples: disagreements
            .filter((example) => example.live === tally.live && example.shadow === tally.shadow)
            .map(({ approvalId, createdAt }) => ({ approvalId, createdAt: createdAt.toISOString() })),
        })),
    };
  }

  async delete(tenant: Tenant, key: string): Promise<void> {
    const outcome = await this.store(tenant).delete(key, {
      type: 'policy.deleted',
      actor: tenant.actor,
      data: { policyKey: key },
      createdAt: new Date(),
    });
    if (outcome === 'not_found') throw new NotFoundError(`No policy with key '${key}' exists.`);
    if (outcome !== 'deleted') {
      const names = outcome.referencedBy.map((referrer) => `'${referrer}'`).join(', ');
      throw new ConflictError(
        `Policy '${key}' is the escalateTo of ${names}: change their escalateTo (or delete them) before deleting it.`,
      );
    }
  }
}

/** Every rule can be stored (see checkPolicyRules), or 422 naming each that cannot (under `prefix`). */
async function assertRulesCompile(
  document: Pick<PolicyDocument, 'rules' | 'defaultOutcome'>,
  prefix: string,
  fairnessKey: string,
): Promise<void> {
  const errors = (await checkPolicyRules(document, fairnessKey)).map((error) => ({ ...error, path: `${prefix}${error.path}` }));
  if (errors.length > 0) throw new ValidationError(errors, errors.map((error) => error.message).join('; '));
}

function toDocument(policy: Policy): PolicyDocument {
  return {
    reviewers: { roles: policy.reviewerRoles as PolicyDocument['reviewers']['roles'], members: policy.reviewerEmails },
    quorum: policy.quorum,
    allowSelfApproval: policy.allowSelfApproval,
    channels: policy.channels as PolicyDocument['channels'],
    stages: policy.stages as PolicyDocument['stages'],
    remindAfterSeconds: policy.remindAfterSeconds,
    remindEverySeconds: policy.remindEverySeconds,
    standingApproval: policy.standingApprovalMaxSeconds === null ? null : { maxSeconds: policy.standingApprovalMaxSeconds },
    shadow: policy.shadow as PolicyDocument['shadow'],
    rules: policy.rules as PolicyDocument['rules'],
    defaultOutcome: policy.defaultOutcome as PolicyDocument['defaultOutcome'],
    timeoutSeconds: policy.timeoutSeconds,
    onTimeout: policy.onTimeout,
    escalateTo: policy.escalateTo,
  };
}

function toView(policy: Policy): PolicyView {
  return {
    key: policy.key,
    version: policy.version,
    ...publicPolicyDocument(toDocument(policy)),
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

/** A stored version as the policy view showed it when that PUT answered, and who made it. */
function toVersionView(stored: PolicyVersion): PolicyVersionView {
  return {
    key: stored.key,
    version: stored.version,
    // Versions stored before shadows (or stages) existed have none.
    ...({ shadow: null, stages: null, ...(stored.document as object) } as PublicPolicyDocument),
    createdAt: stored.policyCreatedAt.toISOString(),
    updatedAt: stored.createdAt.toISOString(),
    changedBy: stored.changedBy as PolicyVersionView['changedBy'],
  };
}

/** The version a page ended at, as an opaque token (base64url of `v:<version>`). */
function encodeVersionCursor(version: number): string {
  return Buffer.from(`v:${version}`, 'utf8').toString('base64url');
}

/** The version a cursor names, or null when it is not one this API gave out. */
function decodeVersionCursor(cursor: string): number | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const match = /^v:([1-9]\d{0,8})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return match && encodeVersionCursor(Number(match[1])) === cursor ? Number(match[1]) : null;
}

/** The key a page ended at, as an opaque token (base64url of `p:<key>`); its form is not part of the API. */
function encodePolicyCursor(key: string): string {
  return Buffer.from(`p:${key}`, 'utf8').toString('base64url');
}

/** The key a cursor names, or null when it is not one this API gave out. */
function decodePolicyCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  return decoded.startsWith('p:') && decoded.length > 2 && encodePolicyCursor(decoded.slice(2)) === cursor ? decoded.slice(2) : null;
}
