import type { RequestHandler } from 'express';
import type { AttemptLimiter } from '../lib/attempt-limiter.js';
import { CsrfError, RateLimitedError, UnsupportedMediaTypeError } from '../lib/errors.js';
import { clientAddress } from './client-address.js';

/** The media type of a request's body, without parameters, in lower case ('' when none is named). */
function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * What the routes that open a session (sign-in, invite acceptance) refuse before they read the
 * body. They take no credentials and no CSRF token, so a page of another site could otherwise sign
 * a visitor's browser in as the page's author (login CSRF): a request whose `origin` is not
 * PUBLIC_URL's is refused (403), and so is a body other than application/json (415), which an
 * HTML form cannot send and a script of another origin cannot send without CORS allowing it.
 * Then the attempts of one client address are counted (429 past the limit), before any password
 * is hashed.
 */
export function cookieSettingGuards({ publicUrl, attempts }: { publicUrl: string; attempts: AttemptLimiter }): RequestHandler[] {
  const ownOrigin = new URL(publicUrl).origin;
  return [
    (req, _res, next) => {
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== ownOrigin) {
        throw new CsrfError(`Sign-in and invite acceptance are taken from pages of ${ownOrigin} only.`);
      }
      next();
    },
    (req, _res, next) => {
      if (mediaType(req.headers['content-type']) !== 'application/json') {
        throw new UnsupportedMediaTypeError('Send the body as JSON, with content-type: application/json.');
      }
      next();
    },
    async (req, _res, next) => {
      const waitSeconds = await attempts.take(clientAddress(req));
      if (waitSeconds !== null) throw new RateLimitedError('Too many sign-in attempts from this address; try again later.', waitSeconds);
      next();
    },
  ];
}
