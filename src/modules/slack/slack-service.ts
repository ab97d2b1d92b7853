import type { WebClient } from '@slack/web-api';
import { pickColumns, selectList } from '../../data/columns.js';
import type { Database } from '../../data/database.js';
import type { SealedColumns } from '../../data/sealed-columns.js';
import { NotFoundError, DependencyUnavailableError, ValidationError } from '../../lib/errors.js';
import { onFirstUse } from '../../lib/first-use.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { Prisma, type SlackIntegration } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import type { Tenant } from '../orgs/tenant.js';
import type { OutboxSignal } from '../outbox/outbox-signal.js';
import { isSlackRefusal, slackClient } from './slack-api.js';
import { SLACK_INTEGRATION_COLUMNS } from './slack-columns.js';
import type { SlackIntegrationInput, SlackIntegrationView } from './slack-schemas.js';
import { isFreshSlackTimestamp, isSlackSignature } from './slack-signature.js';

/** What the audit event of a removal names. */
const REMOVED_INTEGRATION = Prisma.raw(selectList(pickColumns(SLACK_INTEGRATION_COLUMNS, ['teamId', 'channel'])));

/** Calls from jobs may take their time; a call made while Slack waits for our answer (3 s) may not. */
export const JOB_CALL_TIMEOUT_MS = 10_000;
export const INTERACTION_CALL_TIMEOUT_MS = 2_000;

/** An organization's connected workspace, ready to call. */
export interface SlackConnection {
  orgId: string;
  teamId: string;
  channel: string;
  /** The client holding its bot token, made at the first call. */
  client(): Promise<WebClient>;
}

export interface SlackOptions {
  apiUrl: string;
  /** Seals the bot token and the signing secret at rest; without it nothing can be connected. */
  secrets: SecretBox | null;
}

/** Each sealed value is bound to its organization and field: copied elsewhere, it does not open. */
const sealContext = (orgId: string, field: 'botToken' | 'signingSecret') => `slack:${orgId}:${field}`;

/** The sealed columns of a connection, for `secrets:reseal`. */
export const slackSecretColumns: SealedColumns = {
  table: 'slack_integrations',
  key: SLACK_INTEGRATION_COLUMNS.orgId,
  columns: [
    { name: SLACK_INTEGRATION_COLUMNS.botToken, context: (row) => sealContext(row.orgId, 'botToken') },
    { name: SLACK_INTEGRATION_COLUMNS.signingSecret, context: (row) => sealContext(row.orgId, 'signingSecret') },
  ],
};

/** Slack workspaces connected to organizations (see docs/members-and-channels.md); their secrets never leave this class. */
export class SlackService {
  constructor(
    private readonly db: Database,
    private readonly options: SlackOptions,
    private readonly afterCommit: { outboxSignal: Pick<OutboxSignal, 'notify'>; logger: Logger },
  ) {}

  /** Checks the bot token with auth.test, then stores the connection and audits it. */
  async connect(tenant: Tenant, input: SlackIntegrationInput): Promise<SlackIntegrationView> {
    const secrets = this.options.secrets;
    if (!secrets) {
      throw new DependencyUnavailableError(
        'Slack cannot be connected: SECRETS_ENCRYPTION_KEY is not set, and the bot token must not be stored unsealed.',
      );
    }
    const teamId = await this.teamOf(input.botToken);
    const connectedAt = new Date();
    const sealed = {
      teamId,
      channel: input.channel,
      botToken: secrets.seal(input.botToken, sealContext(tenant.orgId, 'botToken')),
      signingSecret: secrets.seal(input.signingSecret, sealContext(tenant.orgId, 'signingSecret')),
      connectedAt,
    };
    const integration = await this.db.$transaction(async (tx) => {
      const saved = await tx.slackIntegration.upsert({
        where: { orgId: tenant.orgId },
        create: { orgId: tenant.orgId, ...sealed },
        update: sealed,
      });
      await appendAuditEvents(tx, tenant.orgId, [integrationEvent('integration.updated', tenant, saved)]);
      return saved;
    });
    this.afterCommit.outboxSignal.notify();
    return toView(integration);
  }

  async view(orgId: string): Promise<SlackIntegrationView> {
    const integration = await this.db.slackIntegration.findUnique({ where: { orgId } });
    if (!integration) throw notConnected();
    return toView(integration);
  }

  async disconnect(tenant: Tenant): Promise<void> {
    const removed = await this.db.$transaction(async (tx) => {
      const [integration] = await tx.$queryRaw<Pick<SlackIntegration, 'teamId' | 'channel'>[]>`
        DELETE FROM slack_integrations WHERE org_id = ${tenant.orgId}::uuid RETURNING ${REMOVED_INTEGRATION}`;
      if (integration) await appendAuditEvents(tx, tenant.orgId, [integrationEvent('integration.removed', tenant, integration)]);
      return integration;
    });
    if (!removed) throw notConnected();
    this.afterCommit.outboxSignal.notify();
  }

  /** The organization's workspace with a client holding its bot token, or null when none is connected. */
  async connection(orgId: string, timeoutMs = JOB_CALL_TIMEOUT_MS): Promise<SlackConnection | null> {
    const integration = await this.db.slackIntegration.findUnique({ where: { orgId } });
    return integration && this.toConnection(integration, timeoutMs);
  }

  /**
   * The connected workspaces whose signing secret signed this request (see docs/members-and-channels.md): the
   * timestamp first (stale: none), then each organization's secret against the signature, in
   * constant time. Nothing of the body is read before this; an empty answer is a 401.
   */
  async verify(timestamp: string | undefined, signature: string | undefined, rawBody: Buffer): Promise<SlackConnection[]> {
    const secrets = this.options.secrets;
    if (!secrets || !signature || !isFreshSlackTimestamp(timestamp)) return [];
    const integrations = await this.db.slackIntegration.findMany();
    return integrations
      .filter((integration) => {
        try {
          const secret = secrets.open(integration.signingSecret, sealContext(integration.orgId, 'signingSecret'));
          return isSlackSignature(secret, timestamp, rawBody, signature);
        } catch (error) {
          this.afterCommit.logger.error({ err: error, orgId: integration.orgId }, 'Slack signing secret does not open');
          return false;
        }
      })
      .map((integration) => this.toConnection(integration, INTERACTION_CALL_TIMEOUT_MS));
  }

  private toConnection(integration: SlackIntegration, timeoutMs: number): SlackConnection {
    const token = this.options.secrets!.open(integration.botToken, sealContext(integration.orgId, 'botToken'));
    return {
      orgId: integration.orgId,
      teamId: integration.teamId,
      channel: integration.channel,
      client: onFirstUse(() => slackClient(token, this.options.apiUrl, timeoutMs)),
    };
  }

  /** The workspace of a bot token; a token Slack refuses is a 422 on botToken. */
  private async teamOf(botToken: string): Promise<string> {
    try {
      const identity = await (await slackClient(botToken, this.options.apiUrl, JOB_CALL_TIMEOUT_MS)).auth.test();
      if (!identity.team_id) throw new ValidationError([{ path: 'botToken', message: 'Slack answered auth.test without a team_id.' }]);
      return identity.team_id;
    } catch (error) {
      if (isSlackRefusal(error)) {
        throw new ValidationError([{ path: 'botToken', message: `Slack refused the bot token: ${error.data.error}.` }]);
      }
      if (error instanceof ValidationError) throw error;
      throw new DependencyUnavailableError(`Slack could not be reached to check the bot token (${(error as Error).message}); try again.`);
    }
  }
}

function notConnected(): NotFoundError {
  return new NotFoundError('No Slack workspace is connected to this organization.');
}

function toView(integration: Pick<SlackIntegration, 'channel' | 'teamId' | 'connectedAt'>): SlackIntegrationView {
  return { channel: integration.channel, teamId: integration.teamId, connectedAt: integration.connectedAt.toISOString() };
}

function integrationEvent(
  type: 'integration.updated' | 'integration.removed',
  tenant: Tenant,
  integration: Pick<SlackIntegration, 'teamId' | 'channel'>,
): AuditEventDraft {
  return {
    type,
    actor: tenant.actor,
    createdAt: new Date(),
    data: { integration: 'slack', teamId: integration.teamId, channel: integration.channel },
  };
}
