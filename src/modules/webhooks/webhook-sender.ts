import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { parseWebhookUrl, resolveWebhookHost, UnsafeWebhookUrlError, type ResolvedAddress } from './webhook-url-guard.js';

/** Response bodies are kept for the deliveries log, truncated to 20 KB (see docs/webhooks.md). */
export const MAX_RESPONSE_BODY_BYTES = 20 * 1024;
/** A 429's `Retry-After` is honoured up to 24 h (see docs/webhooks.md). */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

export interface SendWebhookInput {
  url: string;
  /** The attempt's headers, e.g. from `signDelivery`; `content-length` is added here. */
  headers: Record<string, string>;
  /** The exact body to POST (the bytes that were signed). */
  body: string;
  /** `WEBHOOK_ALLOW_PRIVATE_URLS`: when false, hosts resolving to non-public addresses are refused. */
  allowPrivate: boolean;
  /** Deadline for the whole attempt: DNS, connect, request and reading the response body. */
  timeoutMs?: number;
  /** Deadline for the TCP connection (and TLS handshake) once a socket is opened. */
  connectTimeoutMs?: number;
  /** CA certificates to trust instead of the default roots (tests, development receivers). */
  ca?: string | Buffer | Array<string | Buffer>;
}

export interface AttemptResult {
  /** A 2xx status was received (even if reading its body then failed or was cut short). */
  ok: boolean;
  /** null when no response status was received (refused, DNS, connect, TLS, timeout before headers). */
  statusCode: number | null;
  durationMs: number;
  /** Short reason when `ok` is false (null exactly when `ok` is true). */
  error: string | null;
  /** The first 20 KB of the response body as UTF-8 (NUL characters removed); null without a response. */
  responseBody: string | null;
  /** From `Retry-After` on a 429 or 503 (delta-seconds or HTTP-date), capped at 24 h. */
  retryAfterMs: number | null;
}

/**
 * Performs ONE delivery attempt (see docs/webhooks.md): POST, no redirects followed (a 3xx is a failure),
 * success is a 2xx. The host is resolved and checked by the SSRF guard, and the connection goes
 * only to an address the guard returned (the socket's lookup is pinned to them; nothing
 * re-resolves), while the URL's hostname is kept for the Host header, TLS SNI and the
 * certificate check. Never throws for anything the receiver or the network does: it reports.
 */
export async function sendWebhook({
  url: rawUrl,
  headers,
  body,
  allowPrivate,
  timeoutMs = 15_000,
  connectTimeoutMs = 5_000,
  ca,
}: SendWebhookInput): Promise<AttemptResult> {
  for (const [name, value] of [
    ['timeoutMs', timeoutMs],
    ['connectTimeoutMs', connectTimeoutMs],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number of milliseconds`);
  }
  const started = performance.now();
  const deadline = started + timeoutMs;
  const result = (fields: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({
    ...fields,
    durationMs: Math.round(performance.now() - started),
  });
  const failure = (error: string): AttemptResult => result({ ok: false, statusCode: null, error, responseBody: null, retryAfterMs: null });

  let url: URL;
  let addresses: ResolvedAddress[];
  try {
    url = parseWebhookUrl(rawUrl);
    addresses = await beforeDeadline(resolveWebhookHost(url, { allowPrivate }), timeoutMs);
  } catch (error) {
    if (error instanceof DeadlineError) return failure(`timeout after ${timeoutMs} ms (resolving the host)`);
    if (error instanceof UnsafeWebhookUrlError) {
      // The guard reports both a refused address and a name that does not resolve; only the first is a refusal.
      return failure(/does not resolve/.test(error.message) ? `dns: ${error.message}` : `refused: ${error.message}`);
    }
    return failure(describeError(error));
  }
  if (addresses.length === 0) return failure('dns: host has no address');

  const request = { url, addresses, headers, body, ca, deadline, timeoutMs, connectTimeoutMs };
  let exchange = await exchangeOnce(request);
  // A pooled keep-alive socket the receiver closed meanwhile fails before any byte of response:
  // Node's documented remedy (see `request.reusedSocket`) is to retry the request once. Should the
  // receiver have processed it after all, it sees a duplicate, which it dedupes by event id anyway.
  if (exchange.staleSocket && performance.now() < deadline) exchange = await exchangeOnce(request);

  const { statusCode, bodyText, error } = exchange;
  if (statusCode === null) return failure(error ?? 'no response');
  const ok = statusCode >= 200 && statusCode < 300;
  let statusError: string | null = null;
  if (!ok) {
    const reason = http.STATUS_CODES[statusCode];
    statusError = `HTTP ${statusCode}${reason ? ` ${reason}` : ''}`;
    if (statusCode >= 300 && statusCode < 400) statusError += ' (redirects are not followed)';
    if (error) statusError += ` (response body: ${error})`;
  }
  return result({
    ok,
    statusCode,
    error: statusError,
    responseBody: bodyText,
    retryAfterMs: statusCode === 429 || statusCode === 503 ? parseRetryAfter(exchange.retryAfter) : null,
  });
}

interface ExchangeRequest {
  url: URL;
  addresses: readonly ResolvedAddress[];
  headers: Record<string, string>;
  body: string;
  ca: SendWebhookInput['ca'];
  deadline: number;
  timeoutMs: number;
  connectTimeoutMs: number;
}

interface Exchange {
  statusCode: number | null;
  retryAfter: string | undefined;
  bodyText: string | null;
  /** What went wrong, if anything (before the status: the attempt's error; after it: reading the body). */
  error: string | null;
  /** Failed on a reused keep-alive socket before any response: worth one more try on a new one. */
  staleSocket: boolean;
}

function exchangeOnce({ url, addresses, headers, body, ca, deadline, timeoutMs, connectTimeoutMs }: ExchangeRequest): Promise<Exchange> {
  return new Promise((resolve) => {
    const https_ = url.protocol === 'https:';
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const payload = Buffer.from(body, 'utf8');
    let statusCode: number | null = null;
    let retryAfter: string | undefined;
    const decoder = new StringDecoder('utf8');
    let bodyText: string | null = null;
    let received = 0;
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;

    /** `complete`: the response was read to its end, so the socket may go back to the pool. */
    const settle = (error: string | null, { complete = false, staleSocket = false } = {}): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadlineTimer);
      clearTimeout(connectTimer);
      // Anything unfinished (an error, a timeout, a body over the limit) closes the socket instead of pooling it.
      if (!complete) req.destroy();
      resolve({ statusCode, retryAfter, bodyText: bodyText?.replaceAll('\u0000', '') ?? null, error, staleSocket });
    };

    const req = (https_ ? https : http).request({
      protocol: url.protocol,
      hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      agent: agentFor(url.protocol, addresses),
      ...(https_ ? { servername: isIP(hostname) ? '' : hostname, ...(ca ? { ca } : {}) } : {}),
    });

    const deadlineTimer = setTimeout(() => settle(`timeout after ${timeoutMs} ms`), Math.max(0, deadline - performance.now()));

    req.on('socket', (socket: Socket) => {
      if (!socket.connecting) return; // a pooled keep-alive socket: already connected
      connectTimer = setTimeout(() => settle(`connect timeout after ${connectTimeoutMs} ms`), connectTimeoutMs);
      socket.once(https_ ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });

    req.on('error', (error: NodeJS.ErrnoException) => {
      const stale = req.reusedSocket && statusCode === null && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      settle(describeError(error), { staleSocket: stale });
    });

    req.on('response', (res: IncomingMessage) => {
      statusCode = res.statusCode ?? null;
      const header = res.headers['retry-after'];
      retryAfter = Array.isArray(header) ? header[0] : header;
      bodyText = '';
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = MAX_RESPONSE_BODY_BYTES - received;
        const taken = chunk.length > room ? chunk.subarray(0, room) : chunk;
        received += taken.length;
        // StringDecoder keeps a character cut at the limit out rather than garbling it.
        bodyText += decoder.write(taken);
        if (received >= MAX_RESPONSE_BODY_BYTES) settle(null); // stop reading: the rest is not kept
      });
      res.on('end', () => {
        if (!settled) bodyText += decoder.end();
        settle(null, { complete: true });
      });
      res.on('error', (error: Error) => settle(describeError(error)));
      res.on('close', () => settle(res.complete ? null : 'connection closed while reading the response body'));
    });

    req.end(payload);
  });
}

/**
 * Connection reuse. Every socket must be connected to an address the SSRF guard returned for THIS
 * attempt, so agents are keyed by protocol + the validated address set, and each agent's `lookup`
 * (an agent option, which Node applies over any request option) answers only with that set.
 * A pooled socket is therefore always connected to an address validated just now; when DNS
 * changes, the new answer gets a new agent and old sockets are never picked for it. Within an
 * agent Node still pools by host:port (and, for https, servername and TLS options), so two
 * hostnames sharing an address never share a TLS session.
 *
 * Why keep-alive at all: a fresh connection per attempt (`agent: false`) pays TCP + TLS handshakes
 * on every delivery (2-3 round trips, plus the receiver's TLS CPU), which caps deliveries/s to a
 * busy endpoint and costs the receiver more than the request. With keying by address, reuse is as
 * safe as a fresh connection. Free sockets close after 10 s idle, or earlier when the receiver
 * announces a shorter `Keep-Alive: timeout` (Node honours the hint), and a stale one is retried
 * once (see sendWebhook). The map is bounded; evicted agents are dropped, not destroyed, so
 * in-flight attempts finish and their idle sockets expire on their own (they are unref'd).
 */
const agents = new Map<string, http.Agent>();
const MAX_AGENTS = 512;
const AGENT_OPTIONS = { keepAlive: true, timeout: 10_000, scheduling: 'lifo' } as const;

function agentFor(protocol: string, addresses: readonly ResolvedAddress[]): http.Agent {
  const key = `${protocol}|${addresses
    .map((entry) => entry.address)
    .sort()
    .join(',')}`;
  let agent = agents.get(key);
  if (agent) {
    agents.delete(key); // refresh its place: the map's order is least recently used first
  } else {
    const lookup = pinnedLookup(addresses);
    agent = protocol === 'https:' ? new https.Agent({ ...AGENT_OPTIONS, lookup }) : new http.Agent({ ...AGENT_OPTIONS, lookup });
    if (agents.size >= MAX_AGENTS) agents.delete(agents.keys().next().value!);
  }
  agents.set(key, agent);
  return agent;
}

/** A `lookup` that does no DNS: it answers with the guard's addresses (all of them when asked, for happy eyeballs). */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const candidates = family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
    process.nextTick(() => {
      const first = candidates[0];
      if (!first) {
        const error: NodeJS.ErrnoException = new Error(`no validated IPv${family} address for ${hostname}`);
        error.code = 'ENOTFOUND';
        callback(error, '', undefined);
      } else if (options.all) {
        callback(
          null,
          candidates.map(({ address, family }) => ({ address, family })),
        );
      } else {
        callback(null, first.address, first.family);
      }
    });
  };
}

class DeadlineError extends Error {}

function beforeDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError()), ms);
  });
  return Promise.race([promise, expiry]).finally(() => clearTimeout(timer));
}

/** `connect ECONNREFUSED`, `self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`, ...: short and stable. */
function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    // Happy eyeballs tried several addresses: report each distinct failure once.
    return [...new Set(error.errors.map(describeError))].join('; ');
  }
  const { code, syscall, message } = error as NodeJS.ErrnoException;
  let text: string;
  if (code && syscall) text = `${syscall} ${code}`;
  else if (code && message && !message.includes(code)) text = `${message} (${code})`;
  else text = message || String(error);
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

/** `Retry-After` as delta-seconds or an HTTP-date, in ms from now, capped at 24 h; null if absent or invalid. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const date = Date.parse(text);
    if (Number.isNaN(date) || !/[a-z]/i.test(text)) return null; // only dates, not other numbers Date.parse accepts
    ms = Math.max(0, date - now);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
