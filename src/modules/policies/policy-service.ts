import type { DataLayer } from '../../data/database.js';
import { NotFoundError, ValidationError } from '../../lib/errors.js';
import type { Tenant } from '../orgs/tenant.js';
import { checkPolicyRules } from './policy-rules.js';
import type { PolicyDocument, PolicyView } from './policy-schemas.js';
import { PolicyStore, type Policy } from './policy-store.js';

export class PolicyService {
  constructor(private readonly data: Pick<DataLayer, 'db' | 'sql'>) {}

  private store(tenant: Pick<Tenant, 'orgId'>): PolicyStore {
    return new PolicyStore(this.data.db, this.data.sql, tenant.orgId);
  }

  /** The stored document, or null: what approval creation (and escalation) evaluates. */
  async findDocument(orgId: string, key: string): Promise<PolicyDocument | null> {
    const policy = await this.store({ orgId }).find(key);
    return policy && toDocument(policy);
  }

  async get(tenant: Tenant, key: string): Promise<PolicyView> {
    const policy = await this.store(tenant).find(key);
    if (!policy) throw new NotFoundError(`No policy with key '${key}' exists.`);
    return toView(policy);
  }

  async list(tenant: Tenant): Promise<PolicyView[]> {
    return (await this.store(tenant).list()).map(toView);
  }

  /** Rules are compiled before anything is stored, so a bad expression never reaches evaluation. */
  async put(tenant: Tenant, key: string, document: PolicyDocument): Promise<PolicyView> {
    const ruleErrors = checkPolicyRules(document);
    if (ruleErrors.length > 0) {
      throw new ValidationError(ruleErrors, ruleErrors.map((error) => error.message).join('; '));
    }
    const policy = await this.store(tenant).upsert(key, document, {
      type: 'policy.updated',
      actor: tenant.actor,
      data: { policyKey: key, policy: document },
      createdAt: new Date(),
    });
    return toView(policy);
  }

  async delete(tenant: Tenant, key: string): Promise<void> {
    const deleted = await this.store(tenant).delete(key, {
      type: 'policy.deleted',
      actor: tenant.actor,
      data: { policyKey: key },
      createdAt: new Date(),
    });
    if (!deleted) throw new NotFoundError(`No policy with key '${key}' exists.`);
  }
}

function toDocument(policy: Policy): PolicyDocument {
  return {
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
    ...toDocument(policy),
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}
