import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import express, { type Express } from 'express';
import { AttemptLimiter } from '../lib/attempt-limiter.js';
import type { Services } from '../services.js';
import { DASHBOARD_FAILURES, mountQueueDashboard } from './admin-queues.js';
import { apiReferenceOperations, mountApiReference } from './api-reference.js';
import { consoleOperation, mountConsole } from './console-assets.js';
import { cookieSettingGuards } from './cookie-setting-guards.js';
import { healthOperations, mountHealthChecks } from './health.js';
import { metricsHandler, metricsOperation, recordRequests } from './metrics-endpoint.js';
import { decisionLinkOperations, mountDecisionLinks } from './links/link-routes.js';
import { mountDevMailbox } from './dev-mailbox.js';
import { buildOpenApiDocument } from './openapi.js';
import { errorHandler, notFoundHandler } from './problem.js';
import { logRequests } from './request-log.js';
import { mountRoutes } from './route.js';
import { integrationRoutes } from './routes/integration-routes.js';
import { approvalRoutes } from './routes/approval-routes.js';
import { standingApprovalRoutes } from './routes/standing-approval-routes.js';
import { auditRoutes } from './routes/audit-routes.js';
import { keyRoutes } from './routes/key-routes.js';
import { memberRoutes } from './routes/member-routes.js';
import { pushRoutes } from './routes/push-routes.js';
import { sessionRoutes } from './routes/session-routes.js';
import { policyRoutes } from './routes/policy-routes.js';
import { webhookRoutes } from './routes/webhook-routes.js';
import { mountSlackInteractions, slackInteractionOperation } from './slack-interactions.js';
import { mountTeamsActivities, teamsActivityOperation } from './teams-activities.js';

const API_DESCRIPTION =
  'An agent asks before it acts; a policy answers at once or a human decides; every outcome is written into a per-organization audit chain and delivered as a signed webhook. The guide, with examples, is in docs/ of the repository.';

/** The API as an Express app, without listening: the server and the tests both start from here. */
export function createApp(services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', services.config.TRUST_PROXY);
  app.use(logRequests(services.logger));
  app.use(recordRequests(services.metrics));

  const routes = [
    ...approvalRoutes(services.approvals, services.approvalFeed),
    ...standingApprovalRoutes(services.approvals),
    ...policyRoutes(services.policies),
    ...webhookRoutes(services.webhooks),
    ...auditRoutes(services.audit, services.checkpoints, services.auditTree),
    ...memberRoutes(services.members, services.mailer.transport),
    ...sessionRoutes(services.members, signInGuards(services)),
    ...pushRoutes(services.push),
    ...keyRoutes(services.orgs),
    ...integrationRoutes(services.slack, services.teams),
  ];
  const { METRICS_TOKEN } = services.config;
  const openApiDocument = () =>
    buildOpenApiDocument(routes, { title: 'Approval Gate API', version: '1.0.0', description: API_DESCRIPTION }, [
      ...healthOperations,
      ...(METRICS_TOKEN ? [metricsOperation] : []),
      ...apiReferenceOperations,
      consoleOperation,
      ...decisionLinkOperations,
      slackInteractionOperation,
      teamsActivityOperation,
    ]);

  mountHealthChecks(app, () => services.checkReadiness());
  if (METRICS_TOKEN) app.get('/metrics', metricsHandler(services.metrics, METRICS_TOKEN));
  mountApiReference(app, openApiDocument);
  mountConsole(app, services.config.CONSOLE_DIR);

  mountDecisionLinks(app, services.decisionLinks, services.config.PUBLIC_URL);
  mountSlackInteractions(app, services.slackInteractions);
  mountTeamsActivities(app, services.teamsActivities);
  if (services.config.NODE_ENV === 'development' && services.mailer.transport === 'log' && services.mailbox)
    mountDevMailbox(app, services.mailbox);

  const api = express.Router();
  mountRoutes(api, routes, {
    authenticators: { apiKey: (key) => services.orgs.authenticate(key), session: (cookie) => services.members.authenticateSession(cookie) },
    cookies: { secure: services.config.NODE_ENV === 'production' },
    heartbeatMs: services.config.EVENT_STREAM_HEARTBEAT_MS,
    noteWrite: (principal) => services.reads.noteWrite(principal),
  });
  app.use(api);
  const { ADMIN_USER, ADMIN_PASSWORD } = services.config;
  if (ADMIN_USER && ADMIN_PASSWORD) {
    const failures = new AttemptLimiter(
      services.redis,
      `${services.config.REDIS_PREFIX}:dashboard-failures`,
      DASHBOARD_FAILURES,
      services.logger,
    );
    mountQueueDashboard(app, { queues: services.jobs.all(), user: ADMIN_USER, password: ADMIN_PASSWORD, failures });
  }
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}

/** Sign-in and invite acceptance: same origin, JSON only, and a limit of attempts per client address shared by every web process. */
function signInGuards({ redis, config, logger }: Services) {
  const attempts = new AttemptLimiter(
    redis,
    `${config.REDIS_PREFIX}:sign-in-attempts`,
    { limit: config.SIGN_IN_ATTEMPTS_PER_ADDRESS, windowMs: 60_000 },
    logger,
  );
  return cookieSettingGuards({ publicUrl: config.PUBLIC_URL, attempts });
}

/**
 * The app's HTTP server. Node builds each request and response as an instance of a subclass whose
 * prototype Express's `app.request` and `app.response` then become, so that Express's
 * per-request `Object.setPrototypeOf` finds the prototype already in place. An object whose
 * prototype is changed after it is built leaves V8's shared hidden classes: every property added
 * to it afterwards gives it a hidden class of its own, which held long-polls pay for most. A
 * subclass (rather than a bare function) keeps Node's own estimate of their in-object fields,
 * without which they fall back to dictionary properties, larger still.
 */
export function createHttpServer(app: Express): Server {
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  app.request = adoptedPrototype(app.request, ExpressRequest.prototype);
  app.response = adoptedPrototype(app.response, ExpressResponse.prototype);
  return createServer(
    {
      IncomingMessage: ExpressRequest,
      ServerResponse: ExpressResponse as typeof ServerResponse,
    },
    app,
  );
}

/** `target` made to stand in for `prototype`: the same prototype and the same own properties. */
function adoptedPrototype<T extends object>(prototype: T, target: object): T {
  Object.setPrototypeOf(target, Object.getPrototypeOf(prototype) as object);
  Object.defineProperties(target, Object.getOwnPropertyDescriptors(prototype));
  return target as T;
}
