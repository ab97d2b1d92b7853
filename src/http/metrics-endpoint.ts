import { createServer, type Server } from 'node:http';
import type { RequestHandler, Response } from 'express';
import type { Metrics } from '../lib/metrics.js';
import { secretsEqual } from '../lib/secret-tokens.js';
import type { DocumentedOperation } from './openapi.js';
import { elapsedMs } from './request-log.js';

/** GET /metrics in the OpenAPI document (served only when METRICS_TOKEN is set). */
export const metricsOperation: DocumentedOperation = {
  method: 'get',
  path: '/metrics',
  operation: {
    summary: 'Prometheus metrics of this web process',
    description: 'Served only when METRICS_TOKEN is set; the bearer token is that value, not an API key.',
    tags: ['service'],
    security: [{ bearerAuth: [] }],
    responses: {
      200: { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } },
      401: { description: 'No or wrong METRICS_TOKEN.', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
  },
};

/**
 * Counts every answered request by its route template (not its URL: ids would explode the series).
 * One listener function serves every request; the duration is from the request log's start time,
 * so it must be mounted after logRequests.
 */
export function recordRequests(metrics: Metrics): RequestHandler {
  function record(this: Response): void {
    const { req } = this;
    const route = req.route ? `${req.baseUrl}${String((req.route as { path: string }).path)}` : 'unmatched';
    const labels = { route, method: req.method, status: String(this.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, elapsedMs(this) / 1000);
  }
  return (_req, res, next) => {
    res.on('finish', record);
    next();
  };
}

/** Whether a request carries `authorization: Bearer <METRICS_TOKEN>`, compared in constant time. */
function authorized(header: string | undefined, token: string): boolean {
  const presented = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
  return presented !== undefined && secretsEqual(presented, token);
}

/** GET /metrics in Prometheus text format, behind its bearer token. */
export function metricsHandler(metrics: Metrics, token: string): RequestHandler {
  return async (req, res) => {
    if (!authorized(req.headers.authorization, token)) {
      res.status(401).set('www-authenticate', 'Bearer').type('text/plain').send('A valid METRICS_TOKEN is required.');
      return;
    }
    res.type(metrics.contentType).send(await metrics.exposition());
  };
}

/** A worker's own small HTTP server for its /metrics (it has no API server to mount them on). */
export async function serveMetrics(metrics: Metrics, token: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') return res.writeHead(404).end();
    if (!authorized(req.headers.authorization, token)) return res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
    metrics.exposition().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, resolve));
  return server;
}
