import type { Request, RequestHandler, Response } from 'express';
import { CsrfError, UnauthorizedError } from '../lib/errors.js';
import { secretsEqual } from '../lib/secret-tokens.js';
import type { Tenant } from '../modules/orgs/tenant.js';

/** Resolves a presented credential to the tenant it acts for, or null when it is unknown, revoked or expired. */
export interface Authenticators {
  apiKey(presentedKey: string): Promise<Tenant | null>;
  session(cookieValue: string): Promise<Tenant | null>;
}

/** Which credentials an operation takes: either (the default), a console session only, or none. */
export type AuthMode = 'credentials' | 'session' | 'public';

export const SESSION_COOKIE = 'ag_session';

const BEARER = /^Bearer +([^\s]+) *$/i;
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Resolves the caller, or answers 401. A bearer key wins over a session cookie when both come; a
 * request authenticated by its cookie that may change something must also carry the session's
 * CSRF token (see docs/members-and-channels.md), which a page of another origin cannot read.
 */
export function authenticate(authenticators: Authenticators, mode: Exclude<AuthMode, 'public'>): RequestHandler {
  return async (req, res, next) => {
    const authorization = req.headers.authorization;
    const cookie = sessionCookie(req);
    let tenant: Tenant | null = null;
    if (authorization !== undefined && mode === 'credentials') {
      const match = BEARER.exec(authorization);
      if (!match) throw new UnauthorizedError();
      tenant = await authenticators.apiKey(match[1]!);
      if (!tenant) throw new UnauthorizedError('The API key is unknown or revoked.');
    } else if (cookie) {
      tenant = await authenticators.session(cookie);
      if (!tenant) throw new UnauthorizedError('The console session has ended; sign in again.');
      if (!SAFE_METHODS.has(req.method) && !sameSecret(req.headers['x-csrf-token'], tenant.principal)) throw new CsrfError();
    } else {
      throw new UnauthorizedError(mode === 'session' ? 'No console session: sign in first.' : undefined);
    }
    res.locals.tenant = tenant;
    next();
  };
}

function sameSecret(presented: string | string[] | undefined, principal: Tenant['principal']): boolean {
  return typeof presented === 'string' && principal.type === 'session' && secretsEqual(presented, principal.csrfToken);
}

/** The caller's credential checked again, for a request that outlives a moment: null once it no longer holds. */
export function reauthenticate(req: Request, authenticators: Authenticators, tenant: Tenant): Promise<Tenant | null> {
  if (tenant.principal.type === 'session') return authenticators.session(sessionCookie(req) ?? '');
  return authenticators.apiKey(BEARER.exec(req.headers.authorization ?? '')?.[1] ?? '');
}

/** The value of the session cookie, from the Cookie header (no parser needed for one cookie). */
export function sessionCookie(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === SESSION_COOKIE) return part.slice(separator + 1).trim();
  }
  return undefined;
}

export function tenantOf(res: Response): Tenant {
  const tenant = res.locals.tenant as Tenant | undefined;
  if (!tenant) throw new Error('route reached without authentication');
  return tenant;
}
