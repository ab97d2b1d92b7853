// Requests to the processes under test, on 127.0.0.1, with JSON in and out.
import http from 'node:http';
import { HOST } from './fixtures.js';

export interface JsonResponse {
  status: number;
  body: any;
}

/** One request to 127.0.0.1:<port>; the body, if any, is sent as JSON and the answer parsed as JSON. */
export function requestJson(options: {
  port: number;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  key?: string;
  body?: unknown;
  agent?: http.Agent;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Called once the whole request has been handed to the socket. */
  onSent?: () => void;
}): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = http.request(
      {
        host: HOST,
        port: options.port,
        method: options.method,
        path: options.path,
        agent: options.agent,
        headers: {
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...options.headers,
        },
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    // The local port names the connection, so a caller can ask a proxy where it went.
    req.on('timeout', () =>
      req.destroy(Object.assign(new Error(`${options.method} ${options.path} timed out`), { localPort: req.socket?.localPort })),
    );
    req.on('error', reject);
    if (options.onSent) req.on('finish', options.onSent);
    req.end(payload);
  });
}

/** Like requestJson, but anything other than the expected status is an error. */
export async function expectJson(expected: number, options: Parameters<typeof requestJson>[0]): Promise<any> {
  const response = await requestJson(options);
  if (response.status !== expected) {
    throw new Error(`${options.method} ${options.path}: expected ${expected}, got ${response.status}: ${JSON.stringify(response.body)}`);
  }
  return response.body;
}

export function putPolicy(port: number, key: string, policyKey: string, document: object): Promise<unknown> {
  return expectJson(200, { port, method: 'PUT', path: `/v1/policies/${policyKey}`, key, body: document });
}
