// The shape of the code, checked by `npm run lint`: no import cycle, and no import from a layer up
// to one that builds on it. Processes (workers/, server, dev, cli) and the composition root
// (src/services.ts) stand on HTTP, the consumers and the job declarations, which stand on the
// domain (src/modules), which stands on the plumbing (lib, data, db, config).
const DOMAIN = '^src/modules/';
const JOBS = '^src/jobs/';
const CONSUMERS = '^src/consumers/';
const ROOT = '^src/services[.]ts$';
const HTTP = '^src/http/';
const PROCESSES = ['^workers/', '^src/(server|dev)[.]ts$', '^src/cli/'];
/** The MCP server's package: it stands on the published client, never on the service. */
const MCP_PACKAGE = '^packages/mcp/';
const PLUMBING = ['^src/lib/', '^src/data/', '^src/db/', '^src/config[.]ts$'];

/** The imports that must never be: from, to, and why. */
const NEVER = [
  ['domain-knows-no-listener', DOMAIN, CONSUMERS, 'The domain does not know who listens to its events.'],
  ['domain-knows-no-queue', DOMAIN, JOBS, 'The domain knows no queues: it is handed a port to enqueue with.'],
  ['domain-has-no-service-locator', DOMAIN, ROOT, 'A domain service is handed what it uses, never the composition root.'],
  ['domain-knows-no-http', DOMAIN, HTTP, 'The domain never imports Express or the routes.'],
  ['domain-knows-no-process', DOMAIN, PROCESSES, 'The domain never imports a process or its loops.'],
  ['job-declaration-knows-no-runner', JOBS, CONSUMERS, 'A queue declaration knows nothing of who runs it.'],
  ['job-declaration-imports-no-services', JOBS, ROOT, 'A queue declaration imports no services: producers import it to enqueue.'],
  ['consumer-gets-a-context', CONSUMERS, ROOT, 'A consumer acts with its ConsumerContext, not with the composition root.'],
  ['plumbing-knows-no-domain', PLUMBING, DOMAIN, 'Configuration, lib, data and db serve every layer and know none of the domain.'],
  [
    'mcp-package-stands-on-the-client',
    MCP_PACKAGE,
    '^(src/(?!client/)|workers/)',
    'The MCP package imports the client package, not the service.',
  ],
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'Files that import each other in a loop cannot be read, tested or moved one at a time.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...NEVER.map(([name, from, to, comment]) => ({ name, comment, severity: 'error', from: { path: from }, to: { path: to } })),
  ],
  options: {
    // Type-only imports tie files together as much as the others do.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs'] },
  },
};
