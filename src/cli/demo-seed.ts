import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import type { Services } from '../services.js';
import { SCOPES, type Tenant } from '../modules/orgs/tenant.js';

const DEMO_ORG = 'Demo organization';
const DEMO_POLICY = 'refunds';

const savedDemoSchema = z.object({
  orgId: z.uuid(),
  apiKey: z.object({ id: z.uuid(), key: z.string() }),
});
export type Demo = z.output<typeof savedDemoSchema>;

/** `created`: there was no saved demo; `reused`: the saved one still works; `replaced`: it did not. */
export type DemoOrigin = 'created' | 'reused' | 'replaced';

/**
 * The demo `npm run dev` prints: the one saved in `file` while its key still works in this
 * database, so a restart keeps what was set up with it; otherwise a new one, saved there. A saved
 * demo whose policy was deleted gets the policy back.
 */
export async function prepareDemo(services: Services, file: string): Promise<{ demo: Demo; origin: DemoOrigin }> {
  const saved = await readSavedDemo(file);
  if (saved) {
    const tenant = await services.orgs.authenticate(saved.apiKey.key);
    if (tenant?.orgId === saved.orgId) {
      const { document } = await services.policies.snapshot(tenant.orgId, DEMO_POLICY, { fresh: true });
      if (!document) await putDemoPolicy(services, tenant);
      return { demo: saved, origin: 'reused' };
    }
  }
  const demo = await seedDemo(services);
  // The key is a credential: readable by its owner only.
  await writeFile(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  return { demo, origin: saved === undefined ? 'created' : 'replaced' };
}

/** The saved demo; undefined when there is no file, null when there is one but it is not a demo. */
async function readSavedDemo(file: string): Promise<Demo | null | undefined> {
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
 * Makes the data a newcomer needs to try the API: an organization on the Pro plan, a policy that
 * approves small refunds and sends the rest to review, and a key with every scope.
 */
async function seedDemo(services: Services): Promise<Demo> {
  const { orgId } = await services.orgs.createOrganization({ name: DEMO_ORG, plan: 'pro', adminEmails: ['admin@example.com'] });
  const { id: keyId, key } = await services.orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'demo' });
  await putDemoPolicy(services, { orgId, plan: 'pro', keyId, scopes: new Set(SCOPES), actor: { type: 'system', id: 'demo-seed' } });
  return { orgId, apiKey: { id: keyId, key } };
}

function putDemoPolicy(services: Services, tenant: Tenant) {
  return services.policies.put(tenant, DEMO_POLICY, {
    rules: [{ when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' }],
    defaultOutcome: 'review',
    timeoutSeconds: 3600,
    onTimeout: 'expire',
    escalateTo: null,
  });
}

/** What `npm run dev` prints about its demo: where it came from, and a request to paste. */
export function describeDemo({ demo, origin }: { demo: Demo; origin: DemoOrigin }, { file, port }: { file: string; port: number }): string {
  const provenance = {
    created: `Demo organization ${demo.orgId}, new; saved in ${file} for the next runs.`,
    reused: `Demo organization ${demo.orgId}, reused from ${file} (delete that file for a fresh one).`,
    replaced:
      `The demo organization saved in ${file} is not in this database any more (or its key was revoked);\n` +
      `made a new one: ${demo.orgId}, saved in ${file}.`,
  }[origin];
  return `
${provenance}
API key: ${demo.apiKey.key}
Policy '${DEMO_POLICY}': refunds up to 100 are approved at once, everything else waits for review.

  curl -s localhost:${port}/v1/approvals -H 'authorization: Bearer ${demo.apiKey.key}' \\
    -H 'content-type: application/json' -d '{"action":"refund","payload":{"amount":250},"policyKey":"${DEMO_POLICY}"}'
`;
}
