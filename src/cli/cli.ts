import { generateKeyPairSync } from 'node:crypto';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../config.js';
import { createDataLayer, poolOptionsOf, type DataLayer } from '../data/database.js';
import { AppError } from '../lib/errors.js';
import { secretBoxOf, type SecretBox } from '../lib/secret-box.js';
import type { MemberService } from '../modules/members/member-service.js';
import { OrgService } from '../modules/orgs/org-service.js';
import { PLANS, ROLES, SCOPES } from '../modules/orgs/tenant.js';
import { validate } from '../lib/validation.js';

const USAGE = `Usage: npm run cli -- <command> [options]

  org:create --name NAME --plan free|pro|enterprise [--admin-email EMAIL ...]
  key:create --org ORG_ID --scopes a,b,c [--name NAME]
  key:revoke --id KEY_ID
  key:attribute --org ORG_ID --id KEY_ID (--member EMAIL | --service)
             gives a key made before keys had owners its owner (docs/members-and-channels.md)
  org:plan   --org ORG_ID --plan free|pro|enterprise
  member:create --org ORG_ID --email EMAIL --role admin|reviewer|viewer [--name NAME]
  audit:keygen   a new Ed25519 key for AUDIT_SIGNING_KEY (its private half printed once)
  secrets:reseal every sealed secret (webhook and Slack) sealed again under SECRETS_ENCRYPTION_KEY,
                 unsealed ones sealed; opens those under SECRETS_ENCRYPTION_KEYS_OLD; safe to run again

Scopes: ${SCOPES.join(', ')}`;

/** Who acts through the CLI, as the audit chain records it: the operator, not a member or a key. */
const CLI_ACTOR = { type: 'system', id: 'cli' } as const;

const scopeList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((scope) => scope.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.enum(SCOPES)).min(1));

const commands = {
  'org:create': {
    options: { name: { type: 'string' }, plan: { type: 'string' }, 'admin-email': { type: 'string', multiple: true } },
    schema: z.object({ name: z.string().min(1).max(200), plan: z.enum(PLANS), 'admin-email': z.array(z.email()).default([]) }),
    run: ({ orgs }: CliServices, args: { name: string; plan: (typeof PLANS)[number]; 'admin-email': string[] }) =>
      orgs.createOrganization({ name: args.name, plan: args.plan, adminEmails: args['admin-email'] }),
  },
  'key:create': {
    options: { org: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' } },
    schema: z.object({ org: z.string().min(1), scopes: scopeList, name: z.string().min(1).max(200).optional() }),
    run: ({ orgs }: CliServices, args: { org: string; scopes: (typeof SCOPES)[number][]; name?: string }) =>
      orgs.createApiKey({ orgId: args.org, scopes: args.scopes, ...(args.name ? { name: args.name } : {}) }, CLI_ACTOR),
  },
  'key:attribute': {
    options: { org: { type: 'string' }, id: { type: 'string' }, member: { type: 'string' }, service: { type: 'boolean' } },
    schema: z
      .object({ org: z.string().min(1), id: z.string().min(1), member: z.email().optional(), service: z.literal(true).optional() })
      .refine((args) => (args.member === undefined) !== (args.service === undefined), {
        path: ['member'],
        message: 'give exactly one of --member EMAIL (the key is theirs) and --service (the key is its own principal)',
      }),
    run: ({ orgs }: CliServices, args: { org: string; id: string; member?: string; service?: true }) =>
      orgs.attributeApiKey(args.org, args.id, args.member ? { kind: 'member', email: args.member } : { kind: 'service' }, CLI_ACTOR),
  },
  'key:revoke': {
    options: { id: { type: 'string' } },
    schema: z.object({ id: z.string().min(1) }),
    run: ({ orgs }: CliServices, args: { id: string }) => orgs.revokeApiKey(args.id),
  },
  'org:plan': {
    options: { org: { type: 'string' }, plan: { type: 'string' } },
    schema: z.object({ org: z.string().min(1), plan: z.enum(PLANS) }),
    run: ({ orgs }: CliServices, args: { org: string; plan: (typeof PLANS)[number] }) => orgs.setPlan(args.org, args.plan),
  },
  'audit:keygen': {
    options: {},
    schema: z.object({}),
    run: async () => {
      const { keyIdOf } = await import('../modules/audit/checkpoint-signing.js');
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      return {
        keyId: keyIdOf(publicKey),
        privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
        publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      };
    },
  },
  'secrets:reseal': {
    options: {},
    schema: z.object({}),
    run: async ({ db, secrets }: CliServices) => {
      if (!secrets) throw new CliError('secrets:reseal needs SECRETS_ENCRYPTION_KEY: the key to seal every secret under.');
      // Loaded by this command alone: Slack's service brings Slack's client and the queue library,
      // which every other command would otherwise load at start and never use.
      const [{ resealColumns }, { slackSecretColumns }, { teamsSecretColumns }, { webhookSecretColumns }] = await Promise.all([
        import('../data/sealed-columns.js'),
        import('../modules/slack/slack-service.js'),
        import('../modules/teams/teams-service.js'),
        import('../modules/webhooks/webhook-secrets.js'),
      ]);
      return {
        webhookEndpoints: await resealColumns(db, secrets, webhookSecretColumns),
        slackIntegrations: await resealColumns(db, secrets, slackSecretColumns),
        teamsIntegrations: await resealColumns(db, secrets, teamsSecretColumns),
      };
    },
  },
  'member:create': {
    options: { org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' } },
    schema: z.object({ org: z.string().min(1), email: z.email(), role: z.enum(ROLES), name: z.string().min(1).max(200).optional() }),
    run: async ({ orgs, members }: CliServices, args: { org: string; email: string; role: (typeof ROLES)[number]; name?: string }) => {
      await orgs.requireOrganization(args.org);
      const { member, inviteUrl } = await (
        await members()
      ).create(
        // Whoever runs the CLI holds every scope: it makes the first admin.
        { orgId: args.org, actor: CLI_ACTOR, scopes: new Set(SCOPES) },
        { email: args.email, role: args.role, ...(args.name ? { name: args.name } : {}) },
      );
      return { id: member.id, inviteUrl };
    },
  },
} as const;

interface CliServices {
  orgs: OrgService;
  /** Loaded by the one command that uses it. */
  members(): Promise<MemberService>;
  db: DataLayer['db'];
  secrets: SecretBox | null;
}

export class CliError extends Error {}

/** Runs one command against the database and returns what it prints as JSON. */
export async function runCli(
  argv: string[],
  data: Pick<DataLayer, 'db' | 'sql'>,
  { publicUrl, secrets = null }: { publicUrl: string; secrets?: SecretBox | null },
): Promise<unknown> {
  const [name, ...rest] = argv;
  const command = commands[name as keyof typeof commands];
  if (!command) throw new CliError(name ? `Unknown command '${name}'.\n\n${USAGE}` : USAGE);

  let values: unknown;
  try {
    ({ values } = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n\n${USAGE}`);
  }
  const parsed = validate(command.schema, values, name!);
  if (!parsed.success) {
    const problems = parsed.errors.map((error) => `--${error.path}: ${error.message}`);
    throw new CliError(`${problems.join('\n')}\n\n${USAGE}`);
  }
  // The CLI holds no Redis connection: the relay finds what it writes by polling the outbox.
  const services: CliServices = {
    db: data.db,
    secrets,
    orgs: new OrgService(data),
    members: async () => {
      const { MemberService } = await import('../modules/members/member-service.js');
      return new MemberService(data, { outboxSignal: { notify: async () => {} } }, { publicUrl });
    },
  };
  try {
    return await command.run(services, parsed.data as never);
  } catch (error) {
    if (error instanceof AppError) throw new CliError(error.message);
    throw error;
  }
}

/** The database URL as it may be printed: without its password. */
function printableUrl(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(DATABASE_URL)';
  }
}

/**
 * One line naming the database and why it cannot be used (no such database, nothing listening,
 * a refused login), asked before any command touches it, so that a wrong DATABASE_URL is never
 * a driver's stack trace.
 */
async function checkDatabase(data: DataLayer, databaseUrl: string): Promise<void> {
  try {
    await data.sql.query(null, 'SELECT 1', []);
  } catch (error) {
    const failure = error as { message?: string; code?: string; errors?: { message: string }[] };
    const reason = failure.message || failure.errors?.[0]?.message || failure.code || String(error);
    throw new CliError(`Cannot use the database ${printableUrl(databaseUrl)}: ${reason.split('\n')[0]} (set DATABASE_URL).`);
  }
}

/** Commands that never touch the database. */
const OFFLINE_COMMANDS = new Set(['audit:keygen']);

export async function main(argv: string[]): Promise<number> {
  let data: DataLayer | undefined;
  try {
    const config = loadConfig();
    data = createDataLayer(config.DATABASE_URL, { ...poolOptionsOf(config), size: 2 }, () => {});
    if (argv[0] && argv[0] in commands && !OFFLINE_COMMANDS.has(argv[0])) await checkDatabase(data, config.DATABASE_URL);
    const output = await runCli(argv, data, { publicUrl: config.PUBLIC_URL, secrets: secretBoxOf(config) });
    process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await data?.close();
  }
}
