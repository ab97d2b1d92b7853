import { createRequire } from 'node:module';
import path from 'node:path';
import type { Express } from 'express';
import { html } from '../lib/html.js';
import { htmlContent, type DocumentedOperation } from './openapi.js';

/**
 * Swagger UI's prebuilt files, served from node_modules: the page loads nothing from another
 * origin. The package is the viewer's dist folder and nothing else, so it weighs little.
 */
const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, { file: string; type: string }> = {
  '/docs/swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  '/docs/swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
};
const STARTER_PATH = '/docs/api-reference.js';

/**
 * The page runs no inline script: its starter is a file of this origin too. Swagger UI sets
 * styles through the DOM, not with style attributes or <style> elements, so styles stay 'self';
 * connections go to this origin only (the document, and the requests a reader sends from the page).
 */
export const API_REFERENCE_HEADERS = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "object-src 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * Starts Swagger UI on this origin's document. `validatorUrl: null`: Swagger UI would otherwise
 * send the document to a validator on another site and show its badge.
 */
const starter = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#api-reference',
  deepLinking: true,
  validatorUrl: null,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
});
`;

const page = html`<!doctype html>
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Approval Gate API reference</title>
      <link rel="stylesheet" href="/docs/swagger-ui.css" />
    </head>
    <body>
      <div id="api-reference"></div>
      <script src="/docs/swagger-ui-bundle.js"></script>
      <script src="${STARTER_PATH}"></script>
    </body>
  </html>`.toString();

/**
 * GET /openapi.json, the OpenAPI 3.1 document of everything this process serves, and GET /docs,
 * its reference page. The document is made at its first request: kept from the start, it and the
 * garbage of making it were a share of every web process's memory that few of them ever serve.
 */
export function mountApiReference(app: Express, makeDocument: () => object): void {
  let document: object | undefined;
  app.get('/openapi.json', (_req, res) => {
    res.json((document ??= makeDocument()));
  });
  app.get('/docs', (_req, res) => {
    res.set(API_REFERENCE_HEADERS).set('cache-control', 'no-cache').type('html').send(page);
  });
  app.get(STARTER_PATH, (_req, res) => {
    res.set(API_REFERENCE_HEADERS).set('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(starter);
  });
  for (const [urlPath, { file, type }] of Object.entries(ASSETS)) {
    app.get(urlPath, (_req, res, next) => {
      res
        .set(API_REFERENCE_HEADERS)
        .sendFile(path.join(SWAGGER_UI_DIR, file), { maxAge: '1h', headers: { 'content-type': type } }, (error) => error && next(error));
    });
  }
}

const asset = (urlPath: string, summary: string, mediaType: string): DocumentedOperation => ({
  method: 'get',
  path: urlPath,
  operation: {
    summary,
    tags: ['service'],
    security: [],
    responses: { 200: { description: 'The file.', content: { [mediaType]: { schema: { type: 'string' } } } } },
  },
});

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
  {
    method: 'get',
    path: '/docs',
    operation: {
      summary: 'This reference as a page (Swagger UI, served by this process)',
      tags: ['service'],
      security: [],
      responses: { 200: { description: 'The page; it reads /openapi.json.', content: htmlContent } },
    },
  },
  asset('/docs/swagger-ui-bundle.js', "The reference page's viewer: Swagger UI's bundle", 'text/javascript'),
  asset('/docs/swagger-ui.css', "The reference page's styles: Swagger UI's", 'text/css'),
  asset(STARTER_PATH, 'The script that starts the viewer on /openapi.json', 'text/javascript'),
];
