import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { ILogger } from '@microsoft/teams.common';
import type { JwtValidator } from '@microsoft/teams.apps/dist/middleware/auth/jwt-validator.js';
import type { Database } from '../../data/database.js';
import type { SealedColumns } from '../../data/sealed-columns.js';
import { DependencyUnavailableError, NotFoundError, ValidationError, type FieldError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { TeamsIntegration } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import type { Tenant } from '../orgs/tenant.js';
import type { OutboxSignal } from '../outbox/outbox-signal.js';
import { TEAMS_INTEGRATION_COLUMNS } from './teams-columns.js';
import { botToken, certificateThumbprint, TeamsBot, TeamsCallError, type BotCredential, type TeamsEndpoints } from './teams-connector.js';
import type { TeamsIntegrationInput, TeamsIntegrationView } from './teams-schemas.js';

/** Calls from jobs may take their time; a call made while Teams waits for the answer to a press may not. */
export const JOB_CALL_TIMEOUT_MS = 10_000;

/** An organization's connected bot, ready to call. */
export interface TeamsConnection {
  orgId: string;
  appId: string;
  tenantId: string;
  teamId: string;
  channelId: string;
  bot: TeamsBot;
}

export interface TeamsOptions extends TeamsEndpoints {
  /** The Bot Framework's OpenID metadata: where the keys that sign incoming activities are listed. */
  openIdMetadataUrl: string;
  /** The issuer of the Bot Framework's tokens. */
  tokenIssuer: string;
  /** Seals the app secret at rest; without it nothing can be connected. */
  secrets: SecretBox | null;
}

/** Each sealed value is bound to its organization and field: copied elsewhere, it does not open. */
const sealContext = (orgId: string, field: 'appSecret' | 'appCertificate') => `teams:${orgId}:${field}`;

/** The sealed columns of a connection, for `secrets:reseal`. */
export const teamsSecretColumns: SealedColumns = {
  table: 'teams_integrations',
  key: TEAMS_INTEGRATION_COLUMNS.orgId,
  columns: [
    { name: TEAMS_INTEGRATION_COLUMNS.appSecret, context: (row) => sealContext(row.orgId, 'appSecret') },
    { name: TEAMS_INTEGRATION_COLUMNS.appCertificate, context: (row) => sealContext(row.orgId, 'appCertificate') },
  ],
};

/** The SDK's token validation, loaded on first use, as the SDK's client is (see teams-connector.ts). */
const jwtValidation = () => import('@microsoft/teams.apps/dist/middleware/auth/jwt-validator.js');

/**
 * Microsoft Teams bots connected to organizations (see docs/members-and-channels.md); their secrets
 * never leave this class. Incoming activities are verified here with the Teams SDK's validator.
 */
export class TeamsService {
  /** One validator per bot: each caches the Bot Framework's signing keys it fetched. */
  private readonly validators = new Map<string, Promise<JwtValidator>>();

  constructor(
    private readonly db: Database,
    private readonly options: TeamsOptions,
    private readonly afterCommit: { outboxSignal: Pick<OutboxSignal, 'notify'>; logger: Logger },
  ) {}

  /** Checks the bot's credentials by asking Entra for a token, then stores the connection and audits it. */
  async connect(tenant: Tenant, input: TeamsIntegrationInput): Promise<TeamsIntegrationView> {
    const secrets = this.options.secrets;
    if (!secrets) {
      throw new DependencyUnavailableError(
        'Teams cannot be connected: SECRETS_ENCRYPTION_KEY is not set, and the app secret must not be stored unsealed.',
      );
    }
    const credential: BotCredential = input.certificate
      ? { type: 'certificate', ...input.certificate }
      : { type: 'secret', secret: input.appSecret! };
    if (credential.type === 'certificate') {
      const problems = certificateProblems(credential);
      if (problems.length > 0) throw new ValidationError(problems);
    }
    try {
      await botToken(this.options, { appId: input.appId, tenantId: input.tenantId, credential }, JOB_CALL_TIMEOUT_MS);
    } catch (error) {
      if (error instanceof TeamsCallError && error.status !== null) {
        throw new ValidationError([{ path: credential.type === 'secret' ? 'appSecret' : 'certificate', message: error.message }]);
      }
      throw new DependencyUnavailableError(`${(error as Error).message}; try again.`);
    }
    const fields = {
      appId: input.appId,
      ...(credential.type === 'secret'
        ? { appSecret: secrets.seal(credential.secret, sealContext(tenant.orgId, 'appSecret')), appCertificate: null }
        : {
            appSecret: null,
            appCertificate: secrets.seal(
              JSON.stringify({ certificate: credential.certificate, privateKey: credential.privateKey }),
              sealContext(tenant.orgId, 'appCertificate'),
            ),
          }),
      tenantId: input.tenantId,
      teamId: input.teamId,
      channelId: input.channelId,
      connectedAt: new Date(),
    };
    const integration = await this.db.$transaction(async (tx) => {
      const saved = await tx.teamsIntegration.upsert({
        where: { orgId: tenant.orgId },
        create: { orgId: tenant.orgId, ...fields },
        update: fields,
      });
      await appendAuditEvents(tx, tenant.orgId, [integrationEvent('integration.updated', tenant, saved)]);
      return saved;
    });
    this.afterCommit.outboxSignal.notify();
    return this.toView(integration);
  }

  async view(orgId: string): Promise<TeamsIntegrationView> {
    const integration = await this.db.teamsIntegration.findUnique({ where: { orgId } });
    if (!integration) throw notConnected();
    return this.toView(integration);
  }

  async disconnect(tenant: Tenant): Promise<void> {
    const removed = await this.db.$transaction(async (tx) => {
      const integration = await tx.teamsIntegration.findUnique({ where: { orgId: tenant.orgId } });
      if (!integration) return null;
      await tx.teamsIntegration.delete({ where: { orgId: tenant.orgId } });
      await appendAuditEvents(tx, tenant.orgId, [integrationEvent('integration.removed', tenant, integration)]);
      return integration;
    });
    if (!removed) throw notConnected();
    this.afterCommit.outboxSignal.notify();
  }

  /** The organization's bot, or null when none is connected. */
  async connection(orgId: string, timeoutMs = JOB_CALL_TIMEOUT_MS): Promise<TeamsConnection | null> {
    const integration = await this.db.teamsIntegration.findUnique({ where: { orgId } });
    return integration && this.toConnection(integration, timeoutMs);
  }

  /**
   * The connections whose bot an incoming activity was sent to, once its token is verified as the
   * Bot Framework requires: signed by a key of the configured OpenID metadata (RS256), issued by
   * the Bot Framework, for the bot's app id, unexpired (5 minutes of clock skew), and naming the
   * activity's serviceUrl. The token's audience is read unverified only to choose which bot's
   * rules to check it against. An empty answer is a 401.
   */
  async verify(authorization: string | undefined, serviceUrl: string | undefined): Promise<TeamsConnection[]> {
    const token = /^Bearer ([A-Za-z0-9._-]+)$/.exec(authorization ?? '')?.[1];
    if (!token || !serviceUrl || !this.options.secrets) return [];
    const audience = (await jwtValidation()).decodeJwtPayload(token)?.aud;
    if (typeof audience !== 'string') return [];
    const integrations = await this.db.teamsIntegration.findMany({ where: { appId: audience.toLowerCase() } });
    if (integrations.length === 0) return [];
    const validator = await this.validator(integrations[0]!.appId);
    const claims = await validator.validateAccessToken(token, { validateServiceUrl: { expectedServiceUrl: serviceUrl } });
    if (!claims) return [];
    return integrations.map((integration) => this.toConnection(integration, JOB_CALL_TIMEOUT_MS));
  }

  private validator(appId: string): Promise<JwtValidator> {
    let validator = this.validators.get(appId);
    if (!validator) {
      validator = Promise.all([this.jwksUri(), jwtValidation()]).then(
        ([uri, { JwtValidator }]) =>
          new JwtValidator(
            {
              clientId: appId,
              validateIssuer: { allowedIssuer: this.options.tokenIssuer },
              jwksUriOptions: { type: 'uri', uri },
            },
            sdkLogger(this.afterCommit.logger),
          ),
      );
      // A metadata document that could not be read is asked for again by the next activity.
      validator.catch(() => this.validators.delete(appId));
      this.validators.set(appId, validator);
    }
    return validator;
  }

  /** Where the OpenID metadata says the signing keys are. */
  private async jwksUri(): Promise<string> {
    let response: Response;
    try {
      response = await fetch(this.options.openIdMetadataUrl, { signal: AbortSignal.timeout(JOB_CALL_TIMEOUT_MS) });
    } catch (error) {
      throw new DependencyUnavailableError(`The Bot Framework's OpenID metadata could not be read (${(error as Error).message}).`);
    }
    const metadata = (await response.json().catch(() => null)) as { jwks_uri?: unknown } | null;
    if (!response.ok || typeof metadata?.jwks_uri !== 'string') {
      throw new DependencyUnavailableError(`The Bot Framework's OpenID metadata has no jwks_uri (HTTP ${response.status}).`);
    }
    return metadata.jwks_uri;
  }

  private toConnection(integration: TeamsIntegration, timeoutMs: number): TeamsConnection {
    const credentials = { appId: integration.appId, tenantId: integration.tenantId, credential: this.credentialOf(integration) };
    return {
      orgId: integration.orgId,
      appId: integration.appId,
      tenantId: integration.tenantId,
      teamId: integration.teamId,
      channelId: integration.channelId,
      bot: new TeamsBot(this.options, credentials, timeoutMs),
    };
  }

  /** The connection as the API shows it: a certificate by its thumbprint and expiry, no secret or key. */
  private toView(integration: TeamsIntegration): TeamsIntegrationView {
    return {
      appId: integration.appId,
      tenantId: integration.tenantId,
      teamId: integration.teamId,
      channelId: integration.channelId,
      credential: integration.appSecret !== null ? { type: 'secret' } : credentialView(this.credentialOf(integration)),
      connectedAt: integration.connectedAt.toISOString(),
    };
  }

  private credentialOf(integration: TeamsIntegration): BotCredential {
    const secrets = this.options.secrets!;
    if (integration.appSecret !== null) {
      return { type: 'secret', secret: secrets.open(integration.appSecret, sealContext(integration.orgId, 'appSecret')) };
    }
    const opened = secrets.open(integration.appCertificate!, sealContext(integration.orgId, 'appCertificate'));
    return { type: 'certificate', ...(JSON.parse(opened) as { certificate: string; privateKey: string }) };
  }
}

/** The SDK's logger, written into ours: its refusals of tokens are warnings, its chatter is dropped. */
function sdkLogger(logger: Logger): ILogger {
  const quiet = () => {};
  const sdk: ILogger = {
    debug: quiet,
    info: quiet,
    trace: quiet,
    log: quiet,
    warn: (...message: unknown[]) => logger.warn({ teams: message.map(String) }, 'Teams SDK'),
    error: (...message: unknown[]) => logger.warn({ teams: message.map(String) }, 'Teams SDK refused'),
    child: () => sdk,
  };
  return sdk;
}

function notConnected(): NotFoundError {
  return new NotFoundError('No Microsoft Teams bot is connected to this organization.');
}

function credentialView(credential: BotCredential): TeamsIntegrationView['credential'] {
  if (credential.type === 'secret') return { type: 'secret' };
  return {
    type: 'certificate',
    thumbprintSha256: certificateThumbprint(credential.certificate).toString('hex').toUpperCase(),
    expiresAt: new Date(new X509Certificate(credential.certificate).validTo).toISOString(),
  };
}

/**
 * What Entra would refuse of a certificate credential, said before asking it: the certificate and
 * the key must read, the key must be RSA (Entra's certificate credentials are) and the
 * certificate's own, and the certificate valid now.
 */
function certificateProblems(credential: { certificate: string; privateKey: string }): FieldError[] {
  let certificate: X509Certificate;
  let privateKey: KeyObject;
  try {
    certificate = new X509Certificate(credential.certificate);
  } catch {
    return [{ path: 'certificate.certificate', message: 'certificate.certificate is not a readable X.509 certificate' }];
  }
  try {
    privateKey = createPrivateKey(credential.privateKey);
  } catch {
    return [{ path: 'certificate.privateKey', message: 'certificate.privateKey is not a readable unencrypted private key' }];
  }
  if (privateKey.asymmetricKeyType !== 'rsa') {
    return [{ path: 'certificate.privateKey', message: `certificate.privateKey must be an RSA key, not ${privateKey.asymmetricKeyType}` }];
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    return [{ path: 'certificate.privateKey', message: 'certificate.privateKey is not the key of certificate.certificate' }];
  }
  const now = Date.now();
  if (Date.parse(certificate.validFrom) > now || Date.parse(certificate.validTo) <= now) {
    const validity = `${new Date(certificate.validFrom).toISOString()} to ${new Date(certificate.validTo).toISOString()}`;
    return [{ path: 'certificate.certificate', message: `certificate.certificate is valid from ${validity}, not now` }];
  }
  return [];
}

function integrationEvent(
  type: 'integration.updated' | 'integration.removed',
  tenant: Tenant,
  integration: TeamsIntegration,
): AuditEventDraft {
  return {
    type,
    actor: tenant.actor,
    createdAt: new Date(),
    data: { integration: 'teams', appId: integration.appId, tenantId: integration.tenantId, channelId: integration.channelId },
  };
}
