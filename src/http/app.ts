import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import type { Services } from '../services.js';
import { mountQueueDashboard } from './admin-queues.js';
import { apiReferenceOperations, mountApiReference } from './api-reference.js';
import { consoleOperation, mountConsole } from './console-assets.js';
import { healthOperations, mountHealthChecks } from './health.js';
import { metricsHandler, metricsOperation, recordRequests } from './metrics-endpoint.js';
import { decisionLinkOperations, mountDecisionLinks } from './links/link-routes.js';
import { buildOpenApiDocument } from './openapi.js';
import { errorHandler, notFoundHandler } from './problem.js';
import { mountRoutes } from './route.js';
import { integrationRoutes } from './routes/integration-routes.js';
import { approvalRoutes } from './routes/approval-routes.js';
import { auditRoutes } from './routes/audit-routes.js';
import { keyRoutes } from './routes/key-routes.js';
import { memberRoutes } from './routes/member-routes.js';
import { sessionRoutes } from './routes/session-routes.js';
import { policyRoutes } from './routes/policy-routes.js';
import { webhookRoutes } from './routes/webhook-routes.js';
import { mountSlackInteractions, slackInteractionOperation } from './slack-interactions.js';
import { SlackInteractions } from '../modules/slack/slack-interactions.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const API_DESCRIPTION =
  'An agent asks before it acts; a policy answers at once or a human decides; every outcome is written into a per-organization audit chain and delivered as a signed webhook. The guide, with examples, is in docs/ of the repository.';

/** The API as an Express app, without listening: the server and the tests both start from here. */
export function createApp(services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(recordRequests(services.metrics));

  app.use(
    pinoHttp({
      logger: services.logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
        res.setHeader('x-request-id', id);
        return id;
      },
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
      // One short line per request: never its headers (cookies, authorization) nor the response's.
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customSuccessMessage: (req, res, responseTime) => `${req.method} ${req.originalUrl} ${res.statusCode} ${Math.round(responseTime)} ms`,
      customErrorMessage: (req, res, error) => `${req.method} ${req.originalUrl} ${res.statusCode} failed: ${error.message}`,
    }),
  );

  const routes = [
    ...approvalRoutes(services.approvals, services.approvalFeed),
    ...policyRoutes(services.policies),
    ...webhookRoutes(services.webhooks),
    ...auditRoutes(services.audit, services.checkpoints),
    ...memberRoutes(services.members),
    ...sessionRoutes(services.members),
    ...keyRoutes(services.orgs),
    ...integrationRoutes(services.slack),
  ];
  const { METRICS_TOKEN } = services.config;
  const openApiDocument = buildOpenApiDocument(routes, { title: 'Approval Gate API', version: '1.0.0', description: API_DESCRIPTION }, [
    ...healthOperations,
    ...(METRICS_TOKEN ? [metricsOperation] : []),
    ...apiReferenceOperations,
    consoleOperation,
    ...decisionLinkOperations,
    slackInteractionOperation,
  ]);

  mountHealthChecks(app, () => services.checkReadiness());
  if (METRICS_TOKEN) app.get('/metrics', metricsHandler(services.metrics, METRICS_TOKEN));
  mountApiReference(app, openApiDocument);
  mountConsole(app, services.config.CONSOLE_DIR);

  mountDecisionLinks(app, services.decisionLinks, services.config.PUBLIC_URL);
  mountSlackInteractions(app, new SlackInteractions(services));

  const api = express.Router();
  mountRoutes(api, routes, {
    authenticators: { apiKey: (key) => services.orgs.authenticate(key), session: (cookie) => services.members.authenticateSession(cookie) },
    cookies: { secure: services.config.NODE_ENV === 'production' },
    heartbeatMs: services.config.EVENT_STREAM_HEARTBEAT_MS,
  });
  app.use(api);
  const { ADMIN_USER, ADMIN_PASSWORD } = services.config;
  if (ADMIN_USER && ADMIN_PASSWORD) {
    mountQueueDashboard(app, { queues: services.jobs.all(), user: ADMIN_USER, password: ADMIN_PASSWORD });
  }
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
