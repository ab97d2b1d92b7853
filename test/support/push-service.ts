import { createDecipheriv, createECDH, createHmac, createPublicKey, randomBytes, verify } from 'node:crypto';
import http from 'node:http';
import { listenOnLoopback } from './listen.js';

/** A browser's side of a push subscription: its P-256 key pair and auth secret, as PushManager.subscribe makes them. */
export interface Device {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  /** Decrypts a message pushed to this device. */
  decrypt(body: Buffer): string;
}

export interface PushDelivery {
  device: string;
  at: number;
  ttl: string | undefined;
  urgency: string | undefined;
  /** The VAPID JWT's claims, once its signature checked out against the key in the header. */
  vapid: { aud: string; sub: string; exp: number };
  /** The plaintext, decrypted with the device's keys. */
  message: unknown;
}

const hmac = (key: Buffer, data: Buffer) => createHmac('sha256', key).update(data).digest();

/**
 * Decrypts one aes128gcm message (RFC 8188) encrypted for a Web Push subscription (RFC 8291):
 * the header's salt and the sender's public key, the shared secret with the device's private key,
 * the keys derived with HKDF-SHA-256 from it and the auth secret, then AES-128-GCM of one record.
 */
export function decryptWebPush(body: Buffer, device: { privateKey: Buffer; publicKey: Buffer; authSecret: Buffer }): string {
  const salt = body.subarray(0, 16);
  const idLength = body[20]!;
  const senderKey = body.subarray(21, 21 + idLength);
  const record = body.subarray(21 + idLength);
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(device.privateKey);
  const shared = ecdh.computeSecret(senderKey);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), device.publicKey, senderKey, Buffer.from([1])]);
  const ikm = hmac(hmac(device.authSecret, shared), keyInfo);
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, Buffer.from('Content-Encoding: aes128gcm\0\x01', 'latin1')).subarray(0, 16);
  const nonce = hmac(prk, Buffer.from('Content-Encoding: nonce\0\x01', 'latin1')).subarray(0, 12);
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 0x02, then any padding of zeros.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('not the last record of an aes128gcm message');
  return padded.subarray(0, end).toString('utf8');
}

/** Checks `authorization: vapid t=<ES256 JWT>, k=<public key>` (RFC 8292) and returns the JWT's claims. */
function verifyVapid(header: string | undefined): PushDelivery['vapid'] {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!match) throw new Error(`not a VAPID authorization: ${header}`);
  const [head, claims, signature] = match[1]!.split('.') as [string, string, string];
  const raw = Buffer.from(match[2]!, 'base64url');
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33, 65).toString('base64url') },
    format: 'jwk',
  });
  const valid = verify('sha256', Buffer.from(`${head}.${claims}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  if (!valid) throw new Error('VAPID signature does not verify');
  return JSON.parse(Buffer.from(claims, 'base64url').toString('utf8'));
}

/**
 * A local stand-in for a browser vendor's push service: a real HTTP server whose endpoints are
 * devices the test makes (`device()`), each with its own keys. It checks the VAPID signature,
 * decrypts what it receives with the device's keys, and records it; a device marked `gone`
 * answers 410 (or 404), as a push service does for an expired subscription.
 */
export async function startPushService() {
  const deliveries: PushDelivery[] = [];
  const devices = new Map<string, Device>();
  const answers = new Map<string, number>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const id = (req.url ?? '').replace(/^\/push\//, '');
    const device = devices.get(id);
    const status = answers.get(id);
    if (!device || status) return res.writeHead(status ?? 404).end();
    try {
      if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`content-encoding ${req.headers['content-encoding']}`);
      const vapid = verifyVapid(req.headers.authorization);
      const message = JSON.parse(device.decrypt(Buffer.concat(chunks)));
      deliveries.push({
        device: id,
        at: Date.now(),
        ttl: req.headers.ttl as string | undefined,
        urgency: req.headers.urgency as string | undefined,
        vapid,
        message,
      });
      res.writeHead(201).end();
    } catch (error) {
      res.writeHead(400).end((error as Error).message);
    }
  });
  const port = await listenOnLoopback(server);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    deliveries,
    /** A new device (a browser's subscription) whose endpoint is on this push service. */
    device(id: string = randomBytes(6).toString('hex')): Device {
      const ecdh = createECDH('prime256v1');
      const publicKey = ecdh.generateKeys();
      const authSecret = randomBytes(16);
      const privateKey = ecdh.getPrivateKey();
      const device: Device = {
        endpoint: `${url}/push/${id}`,
        keys: { p256dh: publicKey.toString('base64url'), auth: authSecret.toString('base64url') },
        decrypt: (body) => decryptWebPush(body, { privateKey, publicKey, authSecret }),
      };
      devices.set(id, device);
      return device;
    },
    /** From now on the device's endpoint answers `status` (410, 404, 500...). */
    answer(id: string, status: number) {
      answers.set(id, status);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export type PushServiceStandIn = Awaited<ReturnType<typeof startPushService>>;
