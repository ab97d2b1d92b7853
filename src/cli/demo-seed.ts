import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import type { Config } from '../config.js';
import { redactedRedisUrl } from '../lib/redis-target.js';
import type { Services } from '../services.js';
import { SCOPES, type Scope, type Tenant } from '../modules/orgs/tenant.js';
import { policyDocumentSchema } from '../modules/policies/policy-schemas.js';

const DEMO_ORG = 'Demo organization';
const DEMO_POLICY = 'refunds';
const DEMO_ADMIN = 'admin@example.com';
/** The actor the demo's keys, policy and member are recorded as made by. */
const DEMO_SEED = { type: 'system', id: 'demo-seed' } as const;

/** The agent asks; the reviewer decides. A key that asked may not decide its own request (see docs/policies.md). */
const AGENT_SCOPES: Scope[] = ['approvals:write', 'approvals:read', 'policies:read'];
const REVIEWER_SCOPES: Scope[] = ['approvals:read', 'approvals:decide'];

const keySchema = z.object({ id: z.uuid(), key: z.string() });
const savedDemoSchema = z.object({
  orgId: z.uuid(),
  agentKey: keySchema,
  reviewerKey: keySchema,
  /** Every scope: what the guide's examples of policies, webhooks, audit, members and keys need. Absent from files saved before it existed. */
  adminKey: keySchema.optional(),
  admin: z.object({ email: z.string(), password: z.string() }),
  /** Where the demo was made, so that the file says which database and service its keys belong to. */
  environment: z.record(z.string(), z.string()).optional(),
});
export type Demo = z.output<typeof savedDemoSchema> & { adminKey: z.output<typeof keySchema> };

/** The environment a demo was made in, as `npm run dev` prints it and keeps it in its file (a database password hidden). */
export function demoEnvironment(
  config: Pick<Config, 'NODE_ENV' | 'PUBLIC_URL' | 'DATABASE_URL' | 'REDIS_URL' | 'REDIS_PREFIX' | 'SMTP_URL'>,
) {
  const hidden = (value: string) => {
    const url = new URL(value);
    if (url.password) url.password = '***';
    return url.toString();
  };
  return {
    NODE_ENV: config.NODE_ENV,
    PUBLIC_URL: config.PUBLIC_URL,
    DATABASE_URL: hidden(config.DATABASE_URL),
    REDIS_URL: redactedRedisUrl(config.REDIS_URL),
    REDIS_PREFIX: config.REDIS_PREFIX,
    SMTP_URL: config.SMTP_URL ? hidden(config.SMTP_URL) : '(unset: mail is written to the log and the mailbox)',
  };
}

/** `created`: there was no saved demo; `reused`: the saved one still works; `replaced`: it did not. */
export type DemoOrigin = 'created' | 'reused' | 'replaced';

/**
 * The demo `npm run dev` prints: the one saved in `file` while its agent key still works in this
 * database, so a restart keeps what was set up with it; otherwise a new one, saved there. A saved
 * demo whose policy was deleted gets the policy back.
 */
export async function prepareDemo(
  services: Services,
  file: string,
  environment: Record<string, string> = demoEnvironment(services.config),
): Promise<{ demo: Demo; origin: DemoOrigin }> {
  const saved = await readSavedDemo(file);
  if (saved) {
    const tenant = await services.orgs.authenticate(saved.agentKey.key);
    if (tenant?.orgId === saved.orgId) {
      const { document } = await services.policies.snapshot(tenant.orgId, DEMO_POLICY, { fresh: true });
      if (!document) await putDemoPolicy(services, tenant);
      // A file saved before the admin key existed gets one, so the guide's examples run with it.
      const adminKey = saved.adminKey ?? (await createAdminKey(services, saved.orgId));
      const demo = { ...saved, adminKey, environment };
      await saveDemo(file, demo);
      return { demo, origin: 'reused' };
    }
  }
  const demo = { ...(await seedDemo(services)), environment };
  await saveDemo(file, demo);
  return { demo, origin: saved === undefined ? 'created' : 'replaced' };
}

function saveDemo(file: string, demo: Demo): Promise<void> {
  // The keys and the password are credentials: readable by their owner only.
  return writeFile(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
}

function createAdminKey(services: Services, orgId: string) {
  return services.orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'demo admin' }, DEMO_SEED);
}

/** The saved demo; undefined when there is no file, null when there is one but it is not a demo. */
async function readSavedDemo(file: string): Promise<z.output<typeof savedDemoSchema> | null | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return savedDemoSchema.parse(JSON.parse(text));
  } catch {
    return null;
  }
}

/**
 * Makes what a newcomer needs to try the service: an organization on the Pro plan, a policy that
 * approves small refunds and sends the rest to review, an agent's key and a reviewer's key, and
 * an admin member who can sign in to the console (their invite accepted with a generated password).
 */
async function seedDemo(services: Services): Promise<Demo> {
  const { orgId } = await services.orgs.createOrganization({ name: DEMO_ORG, plan: 'pro', adminEmails: [] });
  const system = DEMO_SEED;
  const agentKey = await services.orgs.createApiKey({ orgId, scopes: AGENT_SCOPES, name: 'demo agent' }, system);
  const reviewerKey = await services.orgs.createApiKey({ orgId, scopes: REVIEWER_SCOPES, name: 'demo reviewer' }, system);
  const adminKey = await createAdminKey(services, orgId);
  await putDemoPolicy(services, {
    orgId,
    plan: 'pro',
    scopes: new Set(),
    actor: system,
    principal: { type: 'api_key', keyId: agentKey.id, owner: null, ownerUnknown: false },
  });
  const { inviteUrl } = await services.members.create(
    { orgId, actor: system, scopes: new Set(SCOPES) },
    { email: DEMO_ADMIN, role: 'admin', name: 'Demo admin' },
  );
  const password = randomBytes(12).toString('base64url');
  await services.members.acceptInvite({ token: new URL(inviteUrl).pathname.split('/').pop()!, password });
  return { orgId, agentKey, reviewerKey, adminKey, admin: { email: DEMO_ADMIN, password } };
}

function putDemoPolicy(services: Services, tenant: Tenant) {
  const document = policyDocumentSchema.parse({ rules: [{ when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' }] });
  return services.policies.put(tenant, DEMO_POLICY, document);
}

/** What `npm run dev` prints about its demo: where it came from, the environment, the credentials, and the variables the guide's examples use. */
export function describeDemo({ demo, origin }: { demo: Demo; origin: DemoOrigin }, { file, port }: { file: string; port: number }): string {
  const provenance = {
    created: `Demo organization ${demo.orgId}, new; saved in ${file} for the next runs.`,
    reused: `Demo organization ${demo.orgId}, reused from ${file} (delete that file for a fresh one).`,
    replaced:
      `The demo organization saved in ${file} is not in this database any more (or its key was revoked);\n` +
      `made a new one: ${demo.orgId}, saved in ${file}.`,
  }[origin];
  const base = `http://localhost:${port}`;
  const environment = Object.entries(demo.environment ?? {})
    .map(([name, value]) => `  ${name}=${value}`)
    .join('\n');
  return `
${provenance}
Environment:
${environment}
Agent key (asks):        ${demo.agentKey.key}   ${AGENT_SCOPES.join(', ')}
Reviewer key (decides):  ${demo.reviewerKey.key}   ${REVIEWER_SCOPES.join(', ')}
Admin key (every scope): ${demo.adminKey.key}
Console:                 ${base}/console  sign in as ${demo.admin.email} / ${demo.admin.password}
Mailbox:                 ${base}/dev/mailbox  (the mail that would have been sent, while SMTP_URL is unset)
Policy '${DEMO_POLICY}': refunds up to 100 are approved at once, everything else waits for review.

The guide's examples (README.md, docs/) read these variables; paste this line into your shell:

  export AG=${base} AGENT_KEY=${demo.agentKey.key} REVIEWER_KEY=${demo.reviewerKey.key} ADMIN_KEY=${demo.adminKey.key} ADMIN_PASSWORD=${demo.admin.password}
`;
}
