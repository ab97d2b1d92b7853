import { z } from 'zod';
import { SESSION_COOKIE } from './authenticate.js';
import type { AnyRouteSpec, ResponseSpec } from './route.js';

function securityOf(spec: AnyRouteSpec): Record<string, string[]>[] {
  if (spec.auth === 'public') return [];
  if (spec.auth === 'session') return [{ sessionCookie: [] }];
  return [{ bearerAuth: [] }, { sessionCookie: [] }];
}

function describeAccess(spec: AnyRouteSpec): string {
  if (spec.auth === 'public') return 'Needs no credentials.';
  const who = spec.auth === 'session' ? 'A console session' : spec.scope ? `The \`${spec.scope}\` scope` : 'Credentials';
  return `${who} required${spec.plans ? `, and the ${spec.plans.join(' or ')} plan` : ''}.`;
}

/** `/v1/approvals/:id` is filed under "approvals", `/v1/invites/accept` under "invites". */
function tagOf(path: string): string {
  return path.split('/')[2] ?? 'service';
}

type JsonSchema = Record<string, unknown>;

/**
 * An operation the app serves outside the `/v1` route mechanism (health, metrics, decision link
 * pages, Slack, the console and this reference): written as an OpenAPI operation object next to
 * the code that mounts it, so that the document covers every route (test/openapi.test.ts walks
 * the router to make sure).
 */
export interface DocumentedOperation {
  method: 'get' | 'post';
  /** An OpenAPI path template, e.g. `/d/{token}`. */
  path: string;
  operation: {
    summary: string;
    description?: string;
    tags: string[];
    security: Record<string, string[]>[];
    parameters?: Record<string, unknown>[];
    requestBody?: Record<string, unknown>;
    responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, unknown> }>;
  };
}

/** A text/html answer of a documented operation. */
export const htmlContent = { 'text/html': { schema: { type: 'string' } } };

/** A required HTML-form body (application/x-www-form-urlencoded) with these string fields. */
export function formBody(required: string[], properties: Record<string, { maxLength?: number; description?: string }>) {
  const fields = Object.fromEntries(Object.entries(properties).map(([name, field]) => [name, { type: 'string', ...field }]));
  return {
    required: true,
    content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required, properties: fields } } },
  };
}

/** A problem+json answer of a documented operation. */
export const problemContent = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/**
 * The OpenAPI 3.1 document, generated from the same route specs and zod schemas that validate
 * requests, so the document cannot drift from the behaviour. OpenAPI 3.1 speaks JSON Schema
 * 2020-12, which is what zod emits; named schemas (`.meta({ id })`) become components.
 */
export function buildOpenApiDocument(
  specs: readonly AnyRouteSpec[],
  info: { title: string; version: string; description?: string },
  others: readonly DocumentedOperation[] = [],
) {
  const components: Record<string, JsonSchema> = {};

  const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const {
      $schema: _dialect,
      $defs,
      ...rest
    } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const rewrite = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
    for (const [name, definition] of Object.entries(($defs ?? {}) as Record<string, unknown>)) components[name] = rewrite(definition);
    return rewrite(rest);
  };

  const parametersOf = (schema: unknown, location: 'path' | 'query') => {
    if (!schema) return [];
    const { properties = {}, required = [] } = toSchema(schema as z.ZodType, 'input') as {
      properties?: Record<string, JsonSchema>;
      required?: string[];
    };
    return Object.entries(properties).map(([name, property]) => ({
      name,
      in: location,
      required: location === 'path' || required.includes(name),
      ...(property.description ? { description: property.description } : {}),
      schema: property,
    }));
  };

  const contentOf = (status: string, response: ResponseSpec) => {
    const content: Record<string, unknown> = {};
    if (response.schema) {
      content[Number(status) >= 400 ? 'application/problem+json' : 'application/json'] = { schema: toSchema(response.schema, 'output') };
    }
    if (response.text) content[response.text.mediaType] = { schema: { type: 'string' }, example: response.text.example };
    return Object.keys(content).length > 0 ? { content } : {};
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const responses = Object.fromEntries(
      Object.entries(spec.responses).map(([status, response]) => [
        status,
        { description: response.description, ...contentOf(status, response) },
      ]),
    );
    (paths[path] ??= {})[spec.method] = {
      summary: spec.summary,
      description: describeAccess(spec),
      tags: [tagOf(spec.path)],
      security: securityOf(spec),
      parameters: [...parametersOf(spec.params, 'path'), ...parametersOf(spec.query, 'query')],
      ...(spec.body
        ? {
            requestBody: {
              // No body reads as {} (see route.ts), so a body whose fields are all optional may be left out.
              required: !(spec.body as z.ZodType).safeParse({}).success,
              content: { 'application/json': { schema: toSchema(spec.body as z.ZodType, 'input') } },
            },
          }
        : {}),
      responses,
    };
  }
  for (const { method, path, operation } of others) (paths[path] ??= {})[method] = operation;

  return {
    openapi: '3.1.0',
    info,
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key, `agk_…` (npm run cli -- key:create, or POST /v1/keys).' },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: 'A console session (POST /v1/session); writes also need the x-csrf-token header.',
        },
      },
    },
  };
}
