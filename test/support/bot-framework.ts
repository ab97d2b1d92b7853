import { execFileSync } from 'node:child_process';
import { createHash, createSign, generateKeyPairSync, randomUUID, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader, jwtVerify } from 'jose';
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
      if (form.get('grant_type') !== 'client_credentials' || form.get('client_id') !== APP_ID) {
        return send(400, { error: 'invalid_request', error_description: 'AADSTS900144: unsupported grant or client.' });
      }
      const refusal = form.has('client_assertion')
        ? await assertionRefusal(form, `${url}${path}`)
        : form.get('client_secret') === APP_SECRET
          ? null
          : 'AADSTS7000215: Invalid client secret provided.';
      if (refusal) return send(401, { error: 'invalid_client', error_description: refusal });
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
  /** Certificates uploaded to the app, by SHA-256 thumbprint (base64url), as Entra keeps them. */
  const certificates = new Map<string, KeyObject>();
  /** Why Entra would refuse this client assertion (certificate credentials), or null. */
  async function assertionRefusal(form: URLSearchParams, tokenUrl: string): Promise<string | null> {
    if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
      return 'AADSTS50027: wrong assertion type.';
    const assertion = form.get('client_assertion') ?? '';
    const key = certificates.get(String(decodeProtectedHeader(assertion)['x5t#S256'] ?? ''));
    if (!key) return 'AADSTS700027: The certificate with identifier used to sign the client assertion is not registered on application.';
    try {
      await jwtVerify(assertion, key, {
        algorithms: ['PS256', 'RS256'],
        audience: tokenUrl,
        issuer: APP_ID,
        subject: APP_ID,
        requiredClaims: ['jti', 'exp', 'nbf'],
      });
      return null;
    } catch (error) {
      return `AADSTS700027: Client assertion failed signature validation (${(error as Error).message}).`;
    }
  }

  const port = await listenOnLoopback(server);
  url = `http://127.0.0.1:${port}`;
  const serviceUrl = `${url}/`;

  return {
    url,
    serviceUrl,
    openIdMetadataUrl: `${url}/v1/.well-known/openidconfiguration`,
    calls,
    /** Uploads a certificate to the app, as an admin does in Entra; its key may then sign client assertions. */
    registerCertificate(certificatePem: string) {
      const certificate = new X509Certificate(certificatePem);
      certificates.set(createHash('sha256').update(certificate.raw).digest('base64url'), certificate.publicKey);
    },
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

/**
 * A self-signed certificate and its key, both PEM, made by openssl's `ca` (which, unlike `req`,
 * takes any validity period, past ones included); `keyType` other than RSA for the refusals.
 */
export function makeCertificate({ from, until, keyType = 'rsa:2048' }: { from: Date; until: Date; keyType?: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'teams-cert-'));
  const at = (name: string) => join(dir, name);
  const asn1Time = (date: Date) => `${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
  try {
    writeFileSync(at('index.txt'), '');
    writeFileSync(at('serial'), '01\n');
    writeFileSync(
      at('ca.cnf'),
      `[ca]\ndefault_ca = bot\n[bot]\ndatabase = ${at('index.txt')}\nnew_certs_dir = ${dir}\nserial = ${at('serial')}\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n`,
    );
    const newKey = keyType.startsWith('ec:')
      ? ['-newkey', 'ec', '-pkeyopt', `ec_paramgen_curve:${keyType.slice(3)}`]
      : ['-newkey', keyType];
    execFileSync(
      'openssl',
      ['req', '-new', ...newKey, '-nodes', '-subj', '/CN=approval-gate-bot', '-keyout', at('key.pem'), '-out', at('req.csr')],
      { stdio: 'ignore' },
    );
    execFileSync(
      'openssl',
      [
        'ca',
        '-batch',
        '-config',
        at('ca.cnf'),
        '-selfsign',
        '-keyfile',
        at('key.pem'),
        '-in',
        at('req.csr'),
        '-startdate',
        asn1Time(from),
        '-enddate',
        asn1Time(until),
        '-notext',
        '-out',
        at('cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { certificate: readFileSync(at('cert.pem'), 'utf8'), privateKey: readFileSync(at('key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
