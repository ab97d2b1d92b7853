import type { RequestHandler, Response } from 'express';
import { UnauthorizedError } from '../lib/errors.js';
import type { Tenant } from '../modules/orgs/tenant.js';

export type Authenticator = (presentedKey: string) => Promise<Tenant | null>;

const BEARER = /^Bearer +([^\s]+) *$/i;

/** Resolves `authorization: Bearer <key>` to the tenant, or answers 401. */
export function authenticate(authenticator: Authenticator): RequestHandler {
  return async (req, res, next) => {
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (!match) throw new UnauthorizedError();
    const tenant = await authenticator(match[1]!);
    if (!tenant) throw new UnauthorizedError('The API key is unknown or revoked.');
    res.locals.tenant = tenant;
    next();
  };
}

export function tenantOf(res: Response): Tenant {
  const tenant = res.locals.tenant as Tenant | undefined;
  if (!tenant) throw new Error('route reached without authentication');
  return tenant;
}
