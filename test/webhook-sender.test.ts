import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { verifyWebhook } from '../src/modules/webhooks/verify-webhook.js';
import { MAX_RETRY_AFTER_MS, parseRetryAfter, sendWebhook, type SendWebhookInput } from '../src/modules/webhooks/webhook-sender.js';
import { signDelivery } from '../src/modules/webhooks/webhook-signing.js';
import { listenOnLoopback } from './support/listen.js';

/**
 * Names under `.test` answered by the SSRF guard's resolver from this table (one answer per
 * lookup, the last one repeating); every other name goes to the real resolver. The system
 * resolver cannot resolve them, so a request that succeeds proves the socket used the guard's answer.
 */
const fakeDns = vi.hoisted(() => new Map<string, Array<Array<{ address: string; family: 4 | 6 }>>>());
vi.mock('node:dns/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:dns/promises')>();
  const lookup = (async (host: string, options: unknown) => {
    const answers = fakeDns.get(host);
    if (!answers) return (actual.lookup as (host: string, options: unknown) => Promise<unknown>)(host, options);
    return answers.length > 1 ? answers.shift() : answers[0];
  }) as typeof actual.lookup;
  return { ...actual, lookup, default: { ...actual, lookup } };
});

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  servername: string | false | null | undefined;
}

interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    if (server instanceof http.Server) server.closeAllConnections(); // https.Server is one too
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A real receiver on 127.0.0.1; the handler runs once the request body has been read. */
async function receiver(
  handler: (req: IncomingMessage, res: ServerResponse, received: Received) => void = (_req, res) => res.end('ok'),
  tls?: { key: string; cert: string },
): Promise<Receiver> {
  const state: Receiver = { url: '', port: 0, requests: [], connections: 0 };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks),
        servername: tls ? (req.socket as TLSSocket).servername : undefined,
      };
      state.requests.push(received);
      handler(req, res, received);
    });
  };
  const server = tls ? https.createServer(tls, onRequest) : http.createServer(onRequest);
  server.on(tls ? 'secureConnection' : 'connection', () => state.connections++);
  servers.push(server);
  state.port = await listenOnLoopback(server);
  state.url = `${tls ? 'https' : 'http'}://127.0.0.1:${state.port}`;
  return state;
}

const body = JSON.stringify({ id: 'e1', type: 'approval.approved', note: 'ü€ \u2028' });
const send = (url: string, options: Partial<SendWebhookInput> = {}) =>
  sendWebhook({ url, headers: { 'content-type': 'application/json' }, body, allowPrivate: true, ...options });

describe('sendWebhook against a real HTTP receiver', () => {
  it('succeeds on 200 and 204', async () => {
    const ok = await receiver((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'));
    expect(await send(`${ok.url}/hook?x=1`)).toEqual({
      ok: true,
      statusCode: 200,
      durationMs: expect.any(Number),
      error: null,
      responseBody: 'thanks',
      retryAfterMs: null,
    });
    expect(ok.requests[0]).toMatchObject({ method: 'POST', url: '/hook?x=1' });

    const empty = await receiver((_req, res) => res.writeHead(204).end());
    expect(await send(empty.url)).toMatchObject({ ok: true, statusCode: 204, error: null, responseBody: '' });
  });

  it('delivers the exact body bytes and every header signDelivery made', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const target = await receiver();
    const headers = signDelivery({ secrets: [secret], eventId: 'e1', deliveryId: 'd1', rawBody: body });
    const result = await send(`${target.url}/in`, { headers });
    expect(result.ok).toBe(true);

    const [seen] = target.requests;
    expect(seen!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(seen!.headers).toMatchObject({
      ...headers,
      'content-length': String(Buffer.byteLength(body)),
      host: `127.0.0.1:${target.port}`,
    });
    // What a receiver does with what it got: both verifiers accept it.
    expect(verifyWebhook({ rawBody: seen!.body, headers: seen!.headers, secret })).toMatchObject({ id: 'e1' });
    expect(new Webhook(secret).verify(seen!.body.toString('utf8'), seen!.headers as Record<string, string>)).toMatchObject({ id: 'e1' });
  });

  it('reports a 500 as a failure and keeps its body', async () => {
    const target = await receiver((_req, res) => res.writeHead(500).end('boom: database down'));
    expect(await send(target.url)).toMatchObject({
      ok: false,
      statusCode: 500,
      error: 'HTTP 500 Internal Server Error',
      responseBody: 'boom: database down',
      retryAfterMs: null,
    });
  });

  it.each([301, 302, 307])('does not follow a %i redirect', async (status) => {
    const elsewhere = await receiver();
    const target = await receiver((_req, res) => res.writeHead(status, { location: `${elsewhere.url}/stolen` }).end('moved'));
    const result = await send(target.url);
    expect(result).toMatchObject({ ok: false, statusCode: status, responseBody: 'moved' });
    expect(result.error).toMatch(new RegExp(`^HTTP ${status} .*\\(redirects are not followed\\)$`));
    expect(elsewhere.connections).toBe(0);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('reads Retry-After on a 429 and a 503, as seconds or an HTTP-date', async () => {
    let retryAfter = '7';
    let status = 429;
    const target = await receiver((_req, res) => res.writeHead(status, { 'retry-after': retryAfter }).end('slow down'));
    expect(await send(target.url)).toMatchObject({ ok: false, statusCode: 429, retryAfterMs: 7000, error: 'HTTP 429 Too Many Requests' });

    retryAfter = new Date(Date.now() + 120_000).toUTCString();
    const dated = await send(target.url);
    expect(dated.retryAfterMs).toBeGreaterThan(118_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(120_000);

    status = 503;
    retryAfter = '30';
    expect(await send(target.url)).toMatchObject({ statusCode: 503, retryAfterMs: 30_000 });

    retryAfter = String(7 * 24 * 3600);
    expect((await send(target.url)).retryAfterMs).toBe(MAX_RETRY_AFTER_MS);

    status = 500;
    expect((await send(target.url)).retryAfterMs).toBeNull();
  });

  it('parses Retry-After strictly', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 12 ', now)).toBe(12_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('Fri, 01 Jan 2027 00:00:00 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
    for (const junk of [undefined, '', '-5', '1.5', 'soon', '2026-01-01']) expect(parseRetryAfter(junk, now)).toBeNull();
  });

  it('reports a 410 Gone', async () => {
    const target = await receiver((_req, res) => res.writeHead(410).end());
    expect(await send(target.url)).toMatchObject({ ok: false, statusCode: 410, error: 'HTTP 410 Gone' });
  });

  it('gives up on a receiver that never answers, at the deadline', async () => {
    const target = await receiver(() => {}); // reads the request, never responds
    const result = await send(target.url, { timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'timeout after 300 ms', responseBody: null });
    expect(result.durationMs).toBeGreaterThanOrEqual(295);
    expect(result.durationMs).toBeLessThan(1_500);
    expect(target.requests).toHaveLength(1);
  });

  it('ends at the deadline when the body trickles forever after the headers', async () => {
    const trickle = (status: number) => (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => clearInterval(timer));
    };
    const failing = await receiver(trickle(500));
    const failed = await send(failing.url, { timeoutMs: 400 });
    expect(failed).toMatchObject({
      ok: false,
      statusCode: 500,
      error: 'HTTP 500 Internal Server Error (response body: timeout after 400 ms)',
    });
    expect(failed.responseBody).toMatch(/^\.+$/);
    expect(failed.durationMs).toBeGreaterThanOrEqual(395);
    expect(failed.durationMs).toBeLessThan(1_500);

    // A 2xx was answered in time: the delivery succeeded, whatever became of its body.
    const accepting = await receiver(trickle(200));
    const accepted = await send(accepting.url, { timeoutMs: 400 });
    expect(accepted).toMatchObject({ ok: true, statusCode: 200, error: null });
    expect(accepted.durationMs).toBeLessThan(1_500);
  });

  it('reports a refused connection', async () => {
    const closed = await receiver();
    const url = closed.url;
    const server = servers.pop()!;
    await new Promise((resolve) => server.close(resolve));
    const result = await send(url);
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'connect ECONNREFUSED', responseBody: null });
    const named = await send(`http://localhost:${closed.port}/`);
    expect(named).toMatchObject({ ok: false, statusCode: null, error: 'connect ECONNREFUSED' });
  });

  it('keeps only the first 20 KB of a large body, and a 2xx is still a success', async () => {
    const megabyte = 'x'.repeat(1024 * 1024);
    const target = await receiver((_req, res) => res.writeHead(200).end(megabyte));
    const result = await send(target.url);
    expect(result).toMatchObject({ ok: true, statusCode: 200, error: null });
    expect(result.responseBody).toHaveLength(20 * 1024);

    const failing = await receiver((_req, res) => res.writeHead(500).end(megabyte));
    expect((await send(failing.url)).responseBody).toHaveLength(20 * 1024);
  });

  it('cuts a multi-byte body on a character boundary and drops NUL characters', async () => {
    const target = await receiver((_req, res) => res.writeHead(400).end('a' + '€'.repeat(10_000)));
    const result = await send(target.url);
    expect(Buffer.byteLength(result.responseBody!)).toBe(1 + 3 * Math.floor((20 * 1024 - 1) / 3));
    expect(result.responseBody).not.toContain('\uFFFD');

    const nul = await receiver((_req, res) => res.writeHead(400).end('a\u0000b'));
    expect((await send(nul.url)).responseBody).toBe('ab');
  });

  it('refuses loopback targets when private addresses are not allowed, without connecting', async () => {
    const target = await receiver();
    for (const url of [target.url, `http://localhost:${target.port}/`, `http://[::1]:${target.port}/`]) {
      const result = await send(url, { allowPrivate: false });
      expect(result).toMatchObject({ ok: false, statusCode: null, responseBody: null });
      expect(result.error).toMatch(/^refused: host '.+' resolves to a non-public address \((127\.0\.0\.1|::1)\)$/);
    }
    expect(target.connections).toBe(0);
    expect(target.requests).toHaveLength(0);
  });

  it('refuses URLs the guard rejects, and reports a name that does not resolve', async () => {
    expect((await send('ftp://127.0.0.1/')).error).toBe('refused: must use http or https');
    expect((await send('http://user:pw@127.0.0.1/')).error).toBe('refused: must not carry credentials');
    const unknown = await send('http://approval-gate-test.invalid/', { timeoutMs: 5_000 });
    expect(unknown).toMatchObject({ ok: false, statusCode: null });
    expect(unknown.error).toMatch(
      /^(dns: host 'approval-gate-test\.invalid' does not resolve|timeout after 5000 ms \(resolving the host\))$/,
    );
  });

  it('connects through the validated addresses when given a hostname (Host header kept)', async () => {
    const target = await receiver();
    const result = await send(`http://localhost:${target.port}/named`);
    expect(result.ok).toBe(true);
    expect(target.requests[0]!.headers.host).toBe(`localhost:${target.port}`);
  });

  it('reuses a keep-alive connection for the same validated address', async () => {
    const target = await receiver();
    for (let i = 0; i < 5; i++) expect((await send(target.url)).ok).toBe(true);
    expect(target.requests).toHaveLength(5);
    expect(target.connections).toBe(1);
  });

  it('retries once on a fresh connection when a pooled one turns out closed', async () => {
    const perSocket = new WeakMap<Socket, number>();
    const target = await receiver((req, res) => {
      const count = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, count);
      // The second request on a connection finds it closed, as when a receiver's idle timeout races us.
      if (count === 2) req.socket.destroy();
      else res.end('ok');
    });
    expect((await send(target.url)).ok).toBe(true);
    const second = await send(target.url);
    expect(second).toMatchObject({ ok: true, statusCode: 200 });
    expect(target.connections).toBe(2);
  });

  it('gives up connecting after connectTimeoutMs (a TLS handshake that never completes)', async () => {
    // A TCP listener that never speaks: the socket connects, the TLS handshake hangs.
    const accepted: Socket[] = [];
    const silent = net.createServer((socket) => accepted.push(socket.on('error', () => {})));
    servers.push(silent);
    const port = await listenOnLoopback(silent);
    const result = await send(`https://127.0.0.1:${port}/`, { connectTimeoutMs: 200, timeoutMs: 5_000 });
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'connect timeout after 200 ms' });
    expect(result.durationMs).toBeGreaterThanOrEqual(195);
    expect(result.durationMs).toBeLessThan(1_500);
    expect(accepted).toHaveLength(1);
    for (const socket of accepted) socket.destroy();
  });

  it('sends to an IPv6 literal with a bracketed Host header', async () => {
    const server = http.createServer((req, res) => res.end(`host=${req.headers.host}`));
    servers.push(server);
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(0, '::1', () => resolve(true));
    });
    if (!listening) return; // no IPv6 loopback on this machine
    const { port } = server.address() as AddressInfo;
    expect(await send(`http://[::1]:${port}/`)).toMatchObject({ ok: true, responseBody: `host=[::1]:${port}` });
  });

  it('rejects nonsensical timeouts as a programming error', async () => {
    await expect(send('http://127.0.0.1/', { timeoutMs: 0 })).rejects.toThrow(TypeError);
    await expect(send('http://127.0.0.1/', { connectTimeoutMs: Number.NaN })).rejects.toThrow(TypeError);
  });
});

describe('sendWebhook connects only to the addresses the guard validated', () => {
  afterEach(() => fakeDns.clear());

  it('uses the validated address for a name the system cannot resolve, keeping the name as Host', async () => {
    const target = await receiver();
    fakeDns.set('receiver.test', [[{ address: '127.0.0.1', family: 4 }]]);
    const result = await send(`http://receiver.test:${target.port}/pinned`);
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(target.requests[0]!.headers.host).toBe(`receiver.test:${target.port}`);
  });

  it('never reuses a pooled connection to an address the new answer no longer contains', async () => {
    const first = await receiver((_req, res) => res.end('first'));
    // The same port on another loopback address: only the address tells the two apart.
    const second = http.createServer((_req, res) => res.end('second'));
    servers.push(second);
    await new Promise<void>((resolve) => second.listen(first.port, '127.0.0.2', resolve));
    fakeDns.set('moving.test', [
      [{ address: '127.0.0.1', family: 4 }],
      [{ address: '127.0.0.1', family: 4 }],
      [{ address: '127.0.0.2', family: 4 }],
    ]);
    const url = `http://moving.test:${first.port}/`;
    expect((await send(url)).responseBody).toBe('first');
    expect((await send(url)).responseBody).toBe('first');
    expect(first.connections).toBe(1); // the second attempt reused the pooled connection
    expect((await send(url)).responseBody).toBe('second'); // DNS moved: the pooled socket to .1 is not used
    expect(first.requests).toHaveLength(2);
  });

  it('refuses a name whose answer includes a non-public address, even next to a public one', async () => {
    const target = await receiver();
    fakeDns.set('mixed.test', [
      [
        { address: '127.0.0.1', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    ]);
    const result = await send(`http://mixed.test:${target.port}/`, { allowPrivate: false });
    expect(result.error).toBe("refused: host 'mixed.test' resolves to a non-public address (127.0.0.1)");
    expect(target.connections).toBe(0);
  });
});

const tlsMaterial = (() => {
  try {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'],
          ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost'],
          ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
        ],
        { stdio: 'ignore' },
      );
      return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } catch {
    return null; // no openssl: the HTTPS tests are skipped
  }
})();

describe.skipIf(!tlsMaterial)('sendWebhook over HTTPS (self-signed certificate)', () => {
  it('verifies the certificate against the hostname, sent as SNI and Host', async () => {
    const target = await receiver(undefined, tlsMaterial!);
    const result = await send(`https://localhost:${target.port}/secure`, { ca: tlsMaterial!.cert });
    expect(result).toMatchObject({ ok: true, statusCode: 200, responseBody: 'ok' });
    expect(target.requests[0]).toMatchObject({ url: '/secure', servername: 'localhost' });
    expect(target.requests[0]!.headers.host).toBe(`localhost:${target.port}`);

    expect((await send(`https://127.0.0.1:${target.port}/`, { ca: tlsMaterial!.cert })).ok).toBe(true);
  });

  it('fails on a certificate it cannot trust', async () => {
    const target = await receiver(undefined, tlsMaterial!);
    const result = await send(`https://localhost:${target.port}/`);
    expect(result).toMatchObject({ ok: false, statusCode: null, responseBody: null });
    expect(result.error).toMatch(/self-signed certificate/);
    expect(target.requests).toHaveLength(0);
  });
});
