import { problemSchema } from '../problem-schema.js';
import type { ResponseSpec } from '../route.js';

const descriptions: Record<number, string> = {
  401: 'Missing, malformed, unknown or revoked API key, or no live console session.',
  402: 'The plan does not allow this (plan below Pro, or free-tier monthly limit reached).',
  403: 'The credentials lack the required scope (or a session write lacks its CSRF token: `csrf_failed`).',
  404: 'No such resource in the organization.',
  409: 'The request conflicts with the current state (see `detail`).',
  410: 'Gone: the invite or link is unknown, used or expired.',
  415: 'The body must be sent as `application/json` (`unsupported_media_type`).',
  422: 'The request failed validation; `errors` names each field.',
  429: 'Too many attempts; `retry-after` says when to try again.',
  503: 'Something the operation needs is unavailable now (see `detail`).',
};

/** Problem-details responses for the OpenAPI document. */
export function problemResponses(...statuses: number[]): Record<number, ResponseSpec> {
  return Object.fromEntries(statuses.map((status) => [status, { description: descriptions[status]!, schema: problemSchema }]));
}
