import { createHash, createPrivateKey, randomUUID, X509Certificate } from 'node:crypto';
import type { Client } from '@microsoft/teams.api';
import type { IAdaptiveCard } from '@microsoft/teams.cards';
import { RetryLater } from '../../lib/job-retries.js';
import { neverConnected } from '../../lib/never-connected.js';

/** Where the bot gets its tokens and reaches Teams; tests point both at local stand-ins. */
export interface TeamsEndpoints {
  /** Entra's login host: tokens come from `<loginUrl>/<tenant>/oauth2/v2.0/token`. */
  loginUrl: string;
  /** The Bot Connector service of the team's region. */
  serviceUrl: string;
}

/** How the bot proves itself to Entra: a client secret, or a certificate's private key signing a client assertion. */
export type BotCredential = { type: 'secret'; secret: string } | { type: 'certificate'; certificate: string; privateKey: string };

export interface BotCredentials {
  appId: string;
  tenantId: string;
  credential: BotCredential;
}

/** How long a client assertion is good for; Entra takes it once, at once. */
const ASSERTION_LIFETIME_SECONDS = 300;

/** The scope of a token for the Bot Connector service. */
const BOT_SCOPE = 'https://api.botframework.com/.default';

/**
 * A failed call to Entra or the Bot Connector. `notApplied`: the call provably changed nothing (an
 * HTTP error status came back, or no connection was made), so making it again cannot post twice.
 */
export class TeamsCallError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly notApplied: boolean,
  ) {
    super(message);
  }
}

/** Whether a failed call to Teams changed nothing, so that asking again cannot post twice. */
export function teamsCallNotApplied(error: unknown): boolean {
  return error instanceof TeamsCallError && error.notApplied;
}

/**
 * The bot's token for the Bot Connector, by the client-credentials grant of its Entra application.
 * A token is asked for each job: no token waits in any process or in Redis.
 */
export async function botToken(endpoints: TeamsEndpoints, credentials: BotCredentials, timeoutMs: number): Promise<string> {
  const url = `${endpoints.loginUrl.replace(/\/+$/, '')}/${encodeURIComponent(credentials.tenantId)}/oauth2/v2.0/token`;
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: credentials.appId, scope: BOT_SCOPE });
  const { credential } = credentials;
  if (credential.type === 'secret') body.set('client_secret', credential.secret);
  else {
    body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    body.set('client_assertion', await clientAssertion(url, credentials.appId, credential));
  }
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    // Nothing is posted before a token exists, so a token that never came changes nothing.
    throw new TeamsCallError(`Entra could not be reached for the bot's token (${(error as Error).message})`, null, true);
  }
  const answer = (await response.json().catch(() => null)) as {
    access_token?: unknown;
    error?: unknown;
    error_description?: unknown;
  } | null;
  if (!response.ok || typeof answer?.access_token !== 'string') {
    const reason = String(answer?.error_description ?? answer?.error ?? `HTTP ${response.status}`);
    throw new TeamsCallError(`Entra refused the bot's credentials: ${reason}`, response.status, true);
  }
  return answer.access_token;
}

/**
 * The signed JWT by which a certificate credential asks Entra for a token: PS256 over the token
 * endpoint as audience, the app as issuer and subject, naming the certificate by its SHA-256
 * thumbprint (`x5t#S256`), as Microsoft identity platform's certificate credentials require.
 */
async function clientAssertion(tokenUrl: string, appId: string, credential: { certificate: string; privateKey: string }): Promise<string> {
  // jose is loaded here, as the Teams SDK is: only a deployment with a certificate credential signs.
  const { SignJWT } = await import('jose');
  return new SignJWT({})
    .setProtectedHeader({ alg: 'PS256', typ: 'JWT', 'x5t#S256': certificateThumbprint(credential.certificate).toString('base64url') })
    .setAudience(tokenUrl)
    .setIssuer(appId)
    .setSubject(appId)
    .setJti(randomUUID())
    .setNotBefore('0s')
    .setIssuedAt()
    .setExpirationTime(`${ASSERTION_LIFETIME_SECONDS}s`)
    .sign(createPrivateKey(credential.privateKey));
}

/** The SHA-256 thumbprint of a PEM certificate: the hash of its DER bytes. */
export function certificateThumbprint(certificatePem: string): Buffer {
  return createHash('sha256').update(new X509Certificate(certificatePem).raw).digest();
}

/** The bot of one organization, posting and replacing cards through the Bot Connector (the SDK's client). */
export class TeamsBot {
  constructor(
    private readonly endpoints: TeamsEndpoints,
    private readonly credentials: BotCredentials,
    private readonly timeoutMs: number,
  ) {}

  /** Posts the card to the conversation (a channel: a new thread); the activity's id. */
  async post(conversationId: string, card: IAdaptiveCard): Promise<string> {
    const client = await this.client();
    const message = await cardMessage(card);
    const sent = await connectorCall(() => client.conversations.activities(conversationId).create(message));
    return sent.id;
  }

  /** Replaces the card of a posted activity, for everyone who sees it. */
  async update(conversationId: string, activityId: string, card: IAdaptiveCard): Promise<void> {
    const client = await this.client();
    const message = await cardMessage(card);
    await connectorCall(() => client.conversations.activities(conversationId).update(activityId, message));
  }

  private async client(): Promise<Client> {
    const token = await botToken(this.endpoints, this.credentials, this.timeoutMs);
    const { Client } = await teamsApi();
    return new Client(this.endpoints.serviceUrl, { token, timeout: this.timeoutMs });
  }
}

/**
 * The Teams SDK, loaded on first use: it is a large share of a process's memory at start, which a
 * deployment whose organizations do not use Teams should not carry (every web and worker process).
 */
const teamsApi = () => import('@microsoft/teams.api');

const cardMessage = async (card: IAdaptiveCard) => new (await teamsApi()).MessageActivityInput().addCard('adaptive', card);

/** The connector's answers as errors jobs act on: a 429 waits for Retry-After, other failures say whether anything changed. */
async function connectorCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const failure = error as { response?: { status?: number; headers?: Record<string, unknown> }; code?: string; message?: string };
    const status = failure.response?.status ?? null;
    if (status === 429) {
      const seconds = Number(failure.response?.headers?.['retry-after'] ?? 1);
      throw new RetryLater(Math.max(1, Number.isFinite(seconds) ? seconds : 1) * 1000, 'the Bot Connector answered 429');
    }
    const notApplied = status !== null || neverConnected(failure.code);
    throw new TeamsCallError(
      `The Bot Connector ${status ? `answered ${status}` : `failed (${failure.message ?? 'unknown'})`}`,
      status,
      notApplied,
    );
  }
}
