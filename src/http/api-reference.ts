import type { Express } from 'express';
import type { DocumentedOperation } from './openapi.js';

/** GET /openapi.json: the OpenAPI 3.1 document of everything this process serves. */
export function mountApiReference(app: Express, document: object): void {
  app.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
}

export const apiReferenceOperations: DocumentedOperation[] = [
  {
    method: 'get',
    path: '/openapi.json',
    operation: {
      summary: 'This OpenAPI 3.1 document',
      tags: ['service'],
      security: [],
      responses: { 200: { description: 'The document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  },
];
