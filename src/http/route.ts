import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import {
  ForbiddenError,
  MethodNotAllowedError,
  NotFoundError,
  PaymentRequiredError,
  ValidationError,
  type FieldError,
} from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import { validate } from '../lib/validation.js';
import { principalKey, type Scope, type Tenant } from '../modules/orgs/tenant.js';
import { errorHandler } from './problem.js';
import { authenticate, reauthenticate, SESSION_COOKIE, tenantOf, type Authenticators, type AuthMode } from './authenticate.js';

type Infer<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteInput<B, Q, P> {
  tenant: Tenant;
  body: Infer<B>;
  query: Infer<Q>;
  params: Infer<P>;
  /** The client: long-running handlers stop waiting once it goes away. */
  caller: Caller;
}

/** Opens a console session in the browser (the cookie of docs/members-and-channels.md), or ends it. */
export type SessionCookie = { token: string; expiresAt: Date } | 'clear';

/** One message of a text/event-stream reply. */
export interface ServerSentEvent {
  id?: string;
  event: string;
  data: unknown;
}

/**
 * A JSON body (or none); CSV, a string or a stream opened only when the reply is sent; or server-
 * sent events, from the stream's Last-Event-ID on, until `signal` aborts: the client went away, or
 * its credential no longer holds.
 */
export type Reply =
  | { status: number; body?: unknown; session?: SessionCookie }
  | { status: number; csv: string | (() => Readable); headers?: Record<string, string> }
  | { status: 200; eventStream: (lastEventId: string | undefined, signal: AbortSignal) => AsyncIterable<ServerSentEvent> };

export interface ResponseSpec {
  description: string;
  /** The JSON body (problem+json for 4xx and 5xx). */
  schema?: z.ZodType;
  /** A text body, besides the JSON one or instead of it, with an example for the reference. */
  text?: { mediaType: 'text/csv' | 'text/event-stream'; example: string };
}

/**
 * One API operation: everything the middleware chain, the handler and the OpenAPI document need.
 * The chain runs in the order of docs/api.md: authenticate (401), scope (403), plan and quota
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
  /** Refusals of the route's own that run before the body is read (origin, media type, attempts per address). */
  guards?: readonly RequestHandler[];
  /** A 402 check that needs the raw body; runs after authorization, before validation. The body may be anything, or undefined. */
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
 * The JSON parser decodes bytes that are not UTF-8 into replacement characters, which would be
 * stored as if the client had sent them: such a body is refused instead, naming `body`.
 */
function requireUtf8(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding === 'utf-8' && !isUtf8(body)) throw new ValidationError([{ path: 'body', message: 'body must be valid UTF-8' }]);
}

/**
 * Parses any request body as JSON whatever its content type. It runs after the scope and plan
 * checks, so a forbidden request's body is never read; whatever goes wrong reading it (malformed
 * JSON, an unknown content-encoding or charset, a corrupt gzip stream, a body over the limit) is
 * held back and reported by the handler, after the 402 prechecks have had their say. No body at
 * all reads as `{}`: the schema then accepts it when every field is optional, and names each
 * missing field otherwise.
 */
const jsonBodyParser = express.json({ limit: BODY_LIMIT, strict: false, type: () => true, verify: requireUtf8 });
const bodyErrors = new WeakMap<Request, unknown>();

function parseJsonBody(req: Request, res: Response, next: NextFunction): void {
  jsonBodyParser(req, res, (error?: unknown) => {
    if (error) {
      bodyErrors.set(req, error);
      req.body = undefined;
    } else if (req.body === undefined) req.body = {};
    next();
  });
}

function bodyError(req: Request): unknown {
  const error = bodyErrors.get(req) as { type?: string; message?: string } | undefined;
  if (error?.type === 'entity.parse.failed')
    return new ValidationError([{ path: 'body', message: `Body is not valid JSON: ${error.message}` }]);
  return error;
}

/**
 * Path segments that are not valid percent-encoded UTF-8 would make the router answer before
 * authentication. They are replaced by a placeholder the routes still match, and the request is
 * remembered: its handler answers 404 (or 422 where the route says so) after authorization.
 */
const undecodablePaths = new WeakSet<Request>();
const UNDECODABLE_SEGMENT_PLACEHOLDER = '-';

function holdUndecodablePaths(req: Request, _res: Response, next: NextFunction): void {
  const queryStart = req.url.indexOf('?');
  const path = queryStart === -1 ? req.url : req.url.slice(0, queryStart);
  const segments = path.split('/');
  let replaced = false;
  for (const [index, segment] of segments.entries()) {
    if (!segment.includes('%')) continue;
    try {
      decodeURIComponent(segment);
    } catch {
      segments[index] = UNDECODABLE_SEGMENT_PLACEHOLDER;
      replaced = true;
    }
  }
  if (replaced) {
    undecodablePaths.add(req);
    req.url = segments.join('/') + (queryStart === -1 ? '' : req.url.slice(queryStart));
  }
  next();
}

function requireAccess(spec: AnyRouteSpec): RequestHandler {
  return (_req, res, next) => {
    if (spec.auth === 'public') return next();
    const tenant = tenantOf(res);
    if (spec.scope && !tenant.scopes.has(spec.scope)) {
      const who = tenant.principal.type === 'session' ? `A member with the ${tenant.principal.role} role` : 'This API key';
      throw new ForbiddenError(`${who} lacks the '${spec.scope}' scope required by ${spec.method.toUpperCase()} ${spec.path}.`);
    }
    if (spec.plans && !spec.plans.includes(tenant.plan)) {
      throw new PaymentRequiredError(`This operation needs the ${spec.plans.join(' or ')} plan; the organization is on ${tenant.plan}.`);
    }
    next();
  };
}

function precheck(spec: AnyRouteSpec): RequestHandler {
  return async (req, res, next) => {
    await spec.precheck!(tenantOf(res), req.body);
    next();
  };
}

function parseParams(spec: AnyRouteSpec, req: Request): unknown {
  const invalid = (errors: FieldError[]) =>
    spec.invalidParams === 'validation_failed'
      ? new ValidationError(errors)
      : new NotFoundError(`No resource at ${req.originalUrl.split('?')[0]}.`);
  if (undecodablePaths.has(req)) throw invalid([{ path: 'path', message: 'The path is not valid percent-encoded UTF-8.' }]);
  if (!spec.params) return undefined;
  const result = validate(spec.params as z.ZodType, req.params, 'path');
  if (!result.success) throw invalid(result.errors);
  return result.data;
}

/**
 * The last step of every route: it answers the request itself, errors included, so the router's
 * continuation is dropped (`req.next`) and the handler's promise is not handed back to the router.
 * Either would keep the router's per-request closures alive for as long as the handler runs, for
 * each long-poll held for up to 30 s.
 */
function handle(spec: AnyRouteSpec, options: MountOptions): RequestHandler {
  return (req, res) => {
    req.next = undefined;
    respond(spec, options, req, res).catch((error: unknown) => errorHandler(error, req, res, () => {}));
  };
}

async function respond(
  spec: AnyRouteSpec,
  { cookies, authenticators, heartbeatMs, noteWrite }: MountOptions,
  req: Request,
  res: Response,
): Promise<void> {
  const params = parseParams(spec, req);
  const unreadable = bodyError(req);
  if (unreadable) throw unreadable;
  const body = spec.body ? parseOrThrow(spec.body as z.ZodType, req.body, 'body') : undefined;
  const query = spec.query ? parseOrThrow(spec.query as z.ZodType, req.query, 'query') : undefined;

  const reply = await spec.handler(new HandlerInput(res, body, query, params));
  // Before the writer hears of it: its next read, on any web process, must see what it wrote.
  if (spec.method !== 'get' && spec.auth !== 'public') await noteWrite(principalKey(tenantOf(res).principal));
  if (res.writableEnded || res.closed) return;
  res.status(reply.status);
  if ('csv' in reply) return sendCsv(req, res, reply.csv, reply.headers);
  if ('eventStream' in reply) {
    // A long-lived stream is authorized again at each heartbeat: a revoked key or an ended
    // session (sign-out, a removed member) stops it, as it would stop any other request.
    const stillAuthorized = async () => (await reauthenticate(req, authenticators, tenantOf(res))) !== null;
    return sendEventStream(req, res, reply.eventStream, { stillAuthorized, heartbeatMs });
  }
  if (reply.session) setSessionCookie(res, reply.session, cookies);
  if (reply.body === undefined) res.end();
  else res.json(reply.body);
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

/**
 * What a handler is given. The tenant is looked up when a handler asks (public routes have none).
 * Classes rather than object literals with getters, which V8 keeps as dictionaries, larger for
 * each long-poll held.
 */
class HandlerInput implements RouteInput<z.ZodType, z.ZodType, z.ZodType> {
  readonly caller: Caller;

  constructor(
    private readonly res: Response,
    readonly body: unknown,
    readonly query: unknown,
    readonly params: unknown,
  ) {
    this.caller = new ResponseCaller(res);
  }

  get tenant(): Tenant {
    return tenantOf(this.res);
  }
}

/** The response's client, for a handler that waits. */
class ResponseCaller implements Caller {
  constructor(private readonly res: Response) {}

  get gone(): boolean {
    return this.res.closed;
  }

  onGone(listener: () => void): void {
    this.res.on('close', listener);
  }
}

async function sendEventStream(
  req: Request,
  res: Response,
  stream: (lastEventId: string | undefined, signal: AbortSignal) => AsyncIterable<ServerSentEvent>,
  { stillAuthorized, heartbeatMs }: { stillAuthorized: () => Promise<boolean>; heartbeatMs: number },
): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  res.set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  res.write('retry: 2000\n\n');
  const heartbeat = setInterval(() => {
    res.write(': ping\n\n');
    stillAuthorized().then(
      (authorized) => authorized || abort.abort(),
      () => undefined, // the database away: keep the stream, check again at the next beat
    );
  }, heartbeatMs);
  try {
    for await (const message of stream(req.get('last-event-id'), abort.signal)) {
      // Messages written in one turn (a page of replay) leave in one packet.
      if (res.writableCorked === 0) {
        res.cork();
        process.nextTick(() => res.uncork());
      }
      const frame = `${message.id ? `id: ${message.id}\n` : ''}event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`;
      // A client that reads slowly slows its stream down, rather than having it buffered here.
      if (!res.write(frame)) await once(res, 'drain', { signal: abort.signal }).catch(() => undefined);
    }
  } catch (error) {
    req.log.warn({ err: error }, 'event stream cut short');
  } finally {
    clearInterval(heartbeat);
    res.end();
  }
}

export interface MountOptions {
  authenticators: Authenticators;
  cookies: CookieOptions;
  /** How often an event stream sends a comment (keeping proxies from closing it) and checks its credential again. */
  heartbeatMs: number;
  /** Marks the principal (its key) as having just written, for read-your-writes on a read replica. */
  noteWrite: (principal: string) => Promise<void>;
}

export interface CookieOptions {
  /** `Secure` outside development and test, where the console is served over plain HTTP. */
  secure: boolean;
}

/** The session cookie (see docs/members-and-channels.md): HttpOnly, SameSite=Lax, Path=/, Secure outside development and test. */
function setSessionCookie(res: Response, session: SessionCookie, { secure }: CookieOptions): void {
  const options = { httpOnly: true, sameSite: 'lax', path: '/', secure } as const;
  if (session === 'clear') res.clearCookie(SESSION_COOKIE, options);
  else res.cookie(SESSION_COOKIE, session.token, { ...options, expires: session.expiresAt });
}

/**
 * Mounts each route with the chain of docs/api.md, "Conventions": authenticate (401), scope and plan (403, 402),
 * read the body, the route's 402 precheck, then path, body and query validation (404, 413, 422)
 * and the handler.
 */
export function mountRoutes(router: Router, specs: readonly AnyRouteSpec[], options: MountOptions): void {
  const { authenticators } = options;
  router.use(holdUndecodablePaths);
  for (const spec of specs) {
    const mode = spec.auth ?? 'credentials';
    const chain: RequestHandler[] = [
      ...(mode === 'public' ? [] : [authenticate(authenticators, mode)]),
      requireAccess(spec),
      ...(spec.guards ?? []),
      ...(spec.body ? [parseJsonBody] : []),
      ...(spec.precheck ? [precheck(spec)] : []),
      handle(spec, options),
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
