import { problemSchema } from '../problem.js';
import type { ResponseSpec } from '../route.js';

const descriptions: Record<number, string> = {
  401: 'Missing, malformed, unknown or revoked API key.',
  402: 'The plan does not allow this (plan below Pro, or free-tier monthly limit reached).',
  403: 'The API key lacks the required scope.',
  404: 'No such resource in the organization.',
  409: 'The approval is not pending.',
  422: 'The request failed validation; `errors` names each field.',
};

/** Problem-details responses for the OpenAPI document. */
export function problemResponses(...statuses: number[]): Record<number, ResponseSpec> {
  return Object.fromEntries(statuses.map((status) => [status, { description: descriptions[status]!, schema: problemSchema }]));
}
