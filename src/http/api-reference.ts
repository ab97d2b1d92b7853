import { createRequire } from 'node:module';
import path from 'node:path';
import type { Express } from 'express';
import { html } from '../lib/html.js';
import { htmlContent, type DocumentedOperation } from './openapi.js';

/**
 * Scalar's standalone bundle, one self-contained file, served from node_modules: the page loads
 * nothing from another origin.
 */
const SCALAR_BUNDLE = path.join(path.dirname(createRequire(import.meta.url).resolve('@scalar/api-reference')), 'browser', 'standalone.js');
const SCALAR_BUNDLE_PATH = '/docs/scalar-api-reference.js';

/**
 * Scalar renders with Vue and puts its styles in <style> elements it creates at run time, so this
 * page, unlike the console, needs style-src 'unsafe-inline'. Scripts stay 'self' only (no inline
 * script: Scalar reads its configuration from a data attribute), and connections go to this origin
 * only: the document, and the requests a reader sends from the page.
 */
export const API_REFERENCE_HEADERS = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
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
 * Scalar's configuration: no fonts from its CDN, no telemetry, no AI agent, and none of its own
 * product offers (its developer toolbar and the "Generate SDKs" panel), which are not this API's.
 */
const SCALAR_CONFIGURATION = {
  url: '/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  showDeveloperTools: 'never',
  customCss: '[class*="explore-scalar"] { display: none !important; }',
  defaultOpenFirstTag: true,
};

const page = html`<!doctype html>
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Approval Gate API reference</title>
    </head>
    <body>
      <script id="api-reference" data-configuration="${JSON.stringify(SCALAR_CONFIGURATION)}"></script>
      <script src="${SCALAR_BUNDLE_PATH}"></script>
    </body>
  </html>`.toString();

/** GET /openapi.json, the OpenAPI 3.1 document of everything this process serves, and GET /docs, its reference page. */
export function mountApiReference(app: Express, document: object): void {
  app.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  app.get('/docs', (_req, res) => {
    res.set(API_REFERENCE_HEADERS).set('cache-control', 'no-cache').type('html').send(page);
  });
  app.get(SCALAR_BUNDLE_PATH, (_req, res, next) => {
    res
      .set(API_REFERENCE_HEADERS)
      .sendFile(
        SCALAR_BUNDLE,
        { maxAge: '1h', headers: { 'content-type': 'text/javascript; charset=utf-8' } },
        (error) => error && next(error),
      );
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
  {
    method: 'get',
    path: '/docs',
    operation: {
      summary: 'This reference as a page (Scalar, served by this process)',
      tags: ['service'],
      security: [],
      responses: { 200: { description: 'The page; it reads /openapi.json.', content: htmlContent } },
    },
  },
  {
    method: 'get',
    path: SCALAR_BUNDLE_PATH,
    operation: {
      summary: "The reference page's script: Scalar's standalone bundle",
      tags: ['service'],
      security: [],
      responses: { 200: { description: 'JavaScript.', content: { 'text/javascript': { schema: { type: 'string' } } } } },
    },
  },
];
