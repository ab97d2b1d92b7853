import type { Express } from 'express';
import type { DocumentedOperation } from './openapi.js';

interface Readiness {
  postgres: boolean;
  redis: boolean;
}

/** GET /healthz (the process answers) and GET /readyz (it can reach PostgreSQL and Redis), for load balancers and orchestrators. */
export function mountHealthChecks(app: Express, checkReadiness: () => Promise<Readiness>): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await checkReadiness();
    const ready = checks.postgres && checks.redis;
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'unavailable', checks });
  });
}

const readinessSchema = {
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { enum: ['ready', 'unavailable'] },
    checks: {
      type: 'object',
      required: ['postgres', 'redis'],
      properties: { postgres: { type: 'boolean' }, redis: { type: 'boolean' } },
    },
  },
};

export const healthOperations: DocumentedOperation[] = [
  {
    method: 'get',
    path: '/healthz',
    operation: {
      summary: 'Liveness: the process answers',
      tags: ['service'],
      security: [],
      responses: {
        200: {
          description: 'Always, while the process runs.',
          content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] } } },
        },
      },
    },
  },
  {
    method: 'get',
    path: '/readyz',
    operation: {
      summary: 'Readiness: PostgreSQL and Redis both answer (within a second)',
      tags: ['service'],
      security: [],
      responses: {
        200: { description: 'Ready.', content: { 'application/json': { schema: readinessSchema } } },
        503: {
          description: 'PostgreSQL or Redis does not answer; `checks` says which.',
          content: { 'application/json': { schema: readinessSchema } },
        },
      },
    },
  },
];
