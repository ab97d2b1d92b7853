import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import http from 'node:http';
import { listenOnLoopback } from './listen.js';

/** The Bot Framework's issuer, as the stand-in's tokens name it and the app is configured to expect. */
export const BOT_ISSUER = 'https://api.botframework.com';
export const TENANT_ID = '5f8a9c1e-2b3d-4e5f-8a6b-1c2d3e4f5a6b';
export const APP_ID = '0c3e5a7b-9d1f-4a2c-8e4b-6d8f0a2c4e6b';
export const APP_SECRET = 'bot-app-secret-for-tests';
export const CHANNEL_ID = '19:approvals0acme@thread.tacv2';
export const TEAM_ID = '19:general0acme@thread.tacv2';

/** A call the bot made to the Bot Connector stand-in. */
export interface ConnectorCall {
  method: 'POST' | 'PUT';
  conversationId: string;
  /** The activity's id: the one answered to a POST, the one in the URL of a PUT. */
  activityId: string;
  token: string | undefined;
  activity: { type?: string; attachments?: { contentType: string; content: AdaptiveCardJson }[] };
  at: number;
}

export interface AdaptiveCardJson {
  type: 'AdaptiveCard';
  body: { type: string; id?: string; inlines?: { text: string }[] }[];
  actions?: { type: string; title: string; verb?: string; url?: string; data?: Record<string, unknown> }[];
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An RS256 JWT signed with `key`, as the Bot Framework signs the tokens of activities it sends. */
export function signJwt(key: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const unsigned = `${base64url({ alg: 'RS256', typ: 'JWT', kid })}.${base64url(claims)}`;
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(key).toString('base64url')}`;
}

/**
 * A local stand-in for the Bot Framework around a Teams bot, in one real HTTP server: the OpenID
 * metadata and its JWKS (one signing key, `kid` `test-key`), Entra's token endpoint
 * (client credentials; a secret other than APP_SECRET is refused as Entra refuses one), and the
 * Bot Connector's activity endpoints, which record every card posted or replaced. `token()`
 * makes the token of an activity sent to the bot, valid unless a claim or the key is overridden.
 */
export async function startBotFramework() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const calls: ConnectorCall[] = [];
  const issuedTokens: string[] = [];
  let url = '';

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && path === '/v1/.well-known/openidconfiguration') {
      return send(200, {
        issuer: BOT_ISSUER,
        authorization_endpoint: `${url}/v1/.well-known/unused`,
        jwks_uri: `${url}/v1/.well-known/keys`,
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['private_key_jwt'],
      });
    }
    if (req.method === 'GET' && path === '/v1/.well-known/keys') {
      return send(200, {
        keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256', endorsements: ['msteams'] }],
      });
    }
    const tokenPath = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (req.method === 'POST' && tokenPath) {
      const form = new URLSearchParams(text);
      if (form.get('grant_type') !== 'client_credentials' || form.get('client_id') !== APP_ID || form.get('client_secret') !== APP_SECRET) {
        return send(401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' });
      }
      const accessToken = `bot-access-${randomUUID()}`;
      issuedTokens.push(accessToken);
      return send(200, { token_type: 'Bearer', expires_in: 3599, access_token: accessToken });
    }
    const activityPath = /^\/v3\/conversations\/([^/]+)\/activities(?:\/([^/]+))?$/.exec(path);
    if (activityPath && (req.method === 'POST' || req.method === 'PUT')) {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !issuedTokens.includes(token)) return send(401, { error: { code: 'Unauthorized', message: 'token unknown' } });
      const activityId = activityPath[2] ?? `1${Date.now()}${calls.length}`;
      calls.push({ method: req.method, conversationId: activityPath[1]!, activityId, token, activity: JSON.parse(text), at: Date.now() });
      return send(req.method === 'POST' ? 201 : 200, { id: activityId });
    }
    send(404, { error: 'not found' });
  });
  const port = await listenOnLoopback(server);
  url = `http://127.0.0.1:${port}`;
  const serviceUrl = `${url}/`;

  return {
    url,
    serviceUrl,
    openIdMetadataUrl: `${url}/v1/.well-known/openidconfiguration`,
    calls,
    cardsOf: (activityId: string) =>
      calls.filter((call) => call.activityId === activityId).map((call) => call.activity.attachments![0]!.content),
    /** The token of an activity sent to the bot: valid for five minutes, unless `claims` or `forged` says otherwise. */
    token(claims: Record<string, unknown> = {}, { forged = false }: { forged?: boolean } = {}) {
      const now = Math.floor(Date.now() / 1000);
      return signJwt(forged ? forger : privateKey, 'test-key', {
        iss: BOT_ISSUER,
        aud: APP_ID,
        serviceurl: serviceUrl,
        nbf: now - 10,
        iat: now - 10,
        exp: now + 300,
        ...claims,
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export type BotFramework = Awaited<ReturnType<typeof startBotFramework>>;

/** A press of a card's Action.Execute button, as Teams sends it to the bot: an adaptiveCard/action invoke. */
export function cardAction(
  serviceUrl: string,
  verb: 'approve' | 'reject' | 'request_changes',
  data: Record<string, unknown>,
  aadObjectId: string | null,
  tenantId = TENANT_ID,
) {
  return {
    type: 'invoke',
    name: 'adaptiveCard/action',
    id: `f:${randomUUID()}`,
    timestamp: new Date().toISOString(),
    serviceUrl,
    channelId: 'msteams',
    from: { id: `29:${randomUUID()}`, name: 'A reviewer', ...(aadObjectId ? { aadObjectId } : {}) },
    conversation: { id: `${CHANNEL_ID};messageid=1`, conversationType: 'channel', tenantId, isGroup: true },
    recipient: { id: `28:${APP_ID}`, name: 'Approval Gate' },
    channelData: { tenant: { id: tenantId }, channel: { id: CHANNEL_ID }, team: { id: TEAM_ID } },
    value: { action: { type: 'Action.Execute', verb, data }, trigger: 'manual' },
  };
}
