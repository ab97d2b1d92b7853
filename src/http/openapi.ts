import { z } from 'zod';
import { SESSION_COOKIE } from './authenticate.js';
import type { AnyRouteSpec } from './route.js';

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

type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document, generated from the same route specs and zod schemas that validate
 * requests, so the document cannot drift from the behaviour. OpenAPI 3.1 speaks JSON Schema
 * 2020-12, which is what zod emits; named schemas (`.meta({ id })`) become components.
 */
export function buildOpenApiDocument(specs: readonly AnyRouteSpec[], info: { title: string; version: string }) {
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

  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const responses = Object.fromEntries(
      Object.entries(spec.responses).map(([status, response]) => [
        status,
        {
          description: response.description,
          ...(response.schema
            ? {
                content: {
                  [Number(status) >= 400 ? 'application/problem+json' : 'application/json']: {
                    schema: toSchema(response.schema, 'output'),
                  },
                },
              }
            : {}),
        },
      ]),
    );
    (paths[path] ??= {})[spec.method] = {
      summary: spec.summary,
      description: describeAccess(spec),
      security: securityOf(spec),
      parameters: [...parametersOf(spec.params, 'path'), ...parametersOf(spec.query, 'query')],
      ...(spec.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(spec.body as z.ZodType, 'input') } } } }
        : {}),
      responses,
    };
  }

  return {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer' },
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
