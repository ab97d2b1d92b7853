import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import { ForbiddenError, MethodNotAllowedError, NotFoundError, PaymentRequiredError, ValidationError } from '../lib/errors.js';
import { validate } from '../lib/validation.js';
import type { Scope, Tenant } from '../modules/orgs/tenant.js';
import { authenticate, SESSION_COOKIE, tenantOf, type Authenticators, type AuthMode } from './authenticate.js';

type Infer<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteInput<B, Q, P> {
  tenant: Tenant;
  body: Infer<B>;
  query: Infer<Q>;
  params: Infer<P>;
  /** Aborts when the client goes away, so long-running handlers can stop waiting. */
  signal: AbortSignal;
}

/** Opens a console session in the browser (the cookie of contract C9), or ends it. */
export type SessionCookie = { token: string; expiresAt: Date } | 'clear';

/** One message of a text/event-stream reply. */
export interface ServerSentEvent {
  id?: string;
  event: string;
  data: unknown;
}

/**
 * A JSON body (or none); CSV, a string or a stream opened only when the reply is sent; or server-
 * sent events, from the stream's Last-Event-ID on, until the client goes away.
 */
export type Reply =
  | { status: number; body?: unknown; session?: SessionCookie }
  | { status: number; csv: string | (() => Readable); headers?: Record<string, string> }
  | { status: 200; eventStream: (lastEventId: string | undefined) => AsyncIterable<ServerSentEvent> };

/** A comment line this often keeps proxies from closing an idle stream. */
const EVENT_STREAM_HEARTBEAT_MS = 15_000;

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
}

/**
 * One API operation: everything the middleware chain, the handler and the OpenAPI document need.
 * The chain runs in the contract's order: authenticate (401), scope (403), plan and quota
 * (402), then validation (422), then the handler.
 */
export interface RouteSpec<B = undefined, Q = undefined, P = undefined> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express path syntax, e.g. `/v1/approvals/:id`. */
  path: string;
  summary: string;
  /** Credentials the operation takes (default: an API key or a session). */
  auth?: AuthMode;
  /** The scope it needs; none for public operations and for a member's own session. */
  scope?: Scope;
  /** Plans allowed to call this operation; others get 402. All plans when omitted. */
  plans?: readonly Tenant['plan'][];
  body?: B;
  query?: Q;
  params?: P;
  /** What a path parameter that fails its schema means: no such resource (default), or bad input. */
  invalidParams?: 'not_found' | 'validation_failed';
  /** A 402 check that needs the raw body; runs after authorization, before validation. */
  precheck?: (tenant: Tenant, rawBody: unknown) => Promise<void>;
  responses: Record<number, ResponseSpec>;
  handler: (input: RouteInput<B, Q, P>) => Promise<Reply>;
}

export type AnyRouteSpec = RouteSpec<any, any, any>;

export function defineRoute<
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  P extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<B, Q, P>): RouteSpec<B, Q, P> {
  return spec;
}

function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const result = validate(schema, value, root);
  if (!result.success) throw new ValidationError(result.errors);
  return result.data;
}

const BODY_LIMIT = '1mb';

/**
 * Parses any request body as JSON whatever its content type, and defers a malformed body to
 * validation, so that it is reported as 422 and only after authorization has had its say. No body
 * at all reads as `{}`: the schema then accepts it when every field is optional, and names each
 * missing field otherwise.
 */
const jsonBodyParser = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });
const malformedBodies = new WeakMap<Request, string>();

function parseJsonBody(req: Request, res: Response, next: NextFunction): void {
  jsonBodyParser(req, res, (error?: unknown) => {
    const parseError = error as { type?: string; message?: string } | undefined;
    if (parseError?.type === 'entity.parse.failed') {
      malformedBodies.set(req, parseError.message ?? 'invalid JSON');
      req.body = undefined;
      return next();
    }
    if (!error && req.body === undefined) req.body = {};
    next(error);
  });
}

function requireAccess(spec: AnyRouteSpec): RequestHandler {
  return async (req, res, next) => {
    if (spec.auth === 'public') return next();
    const tenant = tenantOf(res);
    if (spec.scope && !tenant.scopes.has(spec.scope)) {
      const who = tenant.principal.type === 'session' ? `A member with the ${tenant.principal.role} role` : 'This API key';
      throw new ForbiddenError(`${who} lacks the '${spec.scope}' scope required by ${spec.method.toUpperCase()} ${spec.path}.`);
    }
    if (spec.plans && !spec.plans.includes(tenant.plan)) {
      throw new PaymentRequiredError(`This operation needs the ${spec.plans.join(' or ')} plan; the organization is on ${tenant.plan}.`);
    }
    await spec.precheck?.(tenant, req.body);
    next();
  };
}

function handle(spec: AnyRouteSpec, cookies: CookieOptions): RequestHandler {
  return async (req, res) => {
    let params: unknown;
    if (spec.params) {
      const result = validate(spec.params as z.ZodType, req.params, 'path');
      if (!result.success) {
        if (spec.invalidParams === 'validation_failed') throw new ValidationError(result.errors);
        throw new NotFoundError(`No resource at ${req.path}.`);
      }
      params = result.data;
    }
    const malformed = malformedBodies.get(req);
    if (malformed) throw new ValidationError([{ path: 'body', message: `Body is not valid JSON: ${malformed}` }]);
    const body = spec.body ? parseOrThrow(spec.body as z.ZodType, req.body, 'body') : undefined;
    const query = spec.query ? parseOrThrow(spec.query as z.ZodType, req.query, 'query') : undefined;

    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const reply = await spec.handler({
      get tenant() {
        return tenantOf(res);
      },
      body,
      query,
      params,
      signal: abort.signal,
    });
    if (res.writableEnded || abort.signal.aborted) return;
    res.status(reply.status);
    if ('csv' in reply) return sendCsv(req, res, reply.csv, reply.headers);
    if ('eventStream' in reply) return sendEventStream(req, res, reply.eventStream);
    if (reply.session) setSessionCookie(res, reply.session, cookies);
    if (reply.body === undefined) res.end();
    else res.json(reply.body);
  };
}

async function sendCsv(req: Request, res: Response, csv: string | (() => Readable), headers: Record<string, string> = {}): Promise<void> {
  res.type('text/csv; charset=utf-8').set(headers);
  if (typeof csv === 'string') {
    res.send(csv);
    return;
  }
  // Headers are gone once bytes are: a failure mid-stream can only cut the response short.
  await pipeline(csv(), res).catch((error: unknown) => req.log.warn({ err: error }, 'CSV reply cut short'));
}

async function sendEventStream(
  req: Request,
  res: Response,
  stream: (lastEventId: string | undefined) => AsyncIterable<ServerSentEvent>,
): Promise<void> {
  res.set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  res.write('retry: 2000\n\n');
  const heartbeat = setInterval(() => res.write(': ping\n\n'), EVENT_STREAM_HEARTBEAT_MS);
  try {
    for await (const message of stream(req.get('last-event-id'))) {
      res.write(`${message.id ? `id: ${message.id}\n` : ''}event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`);
    }
  } catch (error) {
    req.log.warn({ err: error }, 'event stream cut short');
  } finally {
    clearInterval(heartbeat);
    res.end();
  }
}

export interface CookieOptions {
  /** `Secure` outside development and test, where the console is served over plain HTTP. */
  secure: boolean;
}

/** The session cookie of contract C9: HttpOnly, SameSite=Lax, Path=/, Secure outside development and test. */
function setSessionCookie(res: Response, session: SessionCookie, { secure }: CookieOptions): void {
  const options = { httpOnly: true, sameSite: 'lax', path: '/', secure } as const;
  if (session === 'clear') res.clearCookie(SESSION_COOKIE, options);
  else res.cookie(SESSION_COOKIE, session.token, { ...options, expires: session.expiresAt });
}

export function mountRoutes(
  router: Router,
  specs: readonly AnyRouteSpec[],
  { authenticators, cookies }: { authenticators: Authenticators; cookies: CookieOptions },
): void {
  for (const spec of specs) {
    const mode = spec.auth ?? 'credentials';
    const chain: RequestHandler[] = [
      ...(mode === 'public' ? [] : [authenticate(authenticators, mode)]),
      ...(spec.body ? [parseJsonBody] : []),
      requireAccess(spec),
      handle(spec, cookies),
    ];
    router[spec.method](spec.path, ...chain);
  }
  for (const [path, allow] of allowedMethods(specs)) {
    // Reached only when no operation on this path has the request's method.
    router.all(path, (req, res) => {
      if (req.method === 'OPTIONS') {
        res.set('allow', allow.join(', ')).status(204).end();
        return;
      }
      throw new MethodNotAllowedError(allow, `${req.path} answers ${allow.join(', ')}, not ${req.method}.`);
    });
  }
}

/** Each path of the API with the methods its operations answer (HEAD wherever GET is, and OPTIONS). */
function allowedMethods(specs: readonly AnyRouteSpec[]): Map<string, string[]> {
  const byPath = new Map<string, Set<string>>();
  for (const spec of specs) {
    const methods = byPath.get(spec.path) ?? new Set<string>();
    methods.add(spec.method.toUpperCase());
    if (spec.method === 'get') methods.add('HEAD');
    byPath.set(spec.path, methods);
  }
  return new Map([...byPath].map(([path, methods]) => [path, [...methods, 'OPTIONS']]));
}
