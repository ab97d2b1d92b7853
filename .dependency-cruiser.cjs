// The shape of the code, checked by `npm run lint`: no import cycle, and no import from a layer up
// to one that builds on it. Processes (workers/, server, dev, cli, mcp) and the composition root
// (src/services.ts) stand on HTTP, consumers and job declarations, which stand on the domain
// (src/modules), which stands on the plumbing (lib, data, db, config).
const DOMAIN = '^src/modules/';
const JOBS = '^src/jobs/';
const CONSUMERS = '^src/consumers/';
const ROOT = '^src/services[.]ts$';
const HTTP = '^src/http/';
const ENTRY_POINTS = ['^workers/', '^src/(server|dev)[.]ts$', '^src/cli/', '^src/mcp/'];
const PLUMBING = ['^src/lib/', '^src/data/', '^src/db/', '^src/config[.]ts$'];

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
    {
      name: 'domain-knows-no-listener',
      comment: 'The domain does not know who listens to its events: consumers subscribe to them.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: CONSUMERS },
    },
    {
      name: 'domain-knows-no-queue',
      comment: 'The domain knows no queues: it is handed a port (an AttemptQueue, an ExportQueue) to enqueue with.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: JOBS },
    },
    {
      name: 'domain-has-no-service-locator',
      comment: 'A domain service is handed what it uses, never the composition root.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: ROOT },
    },
    {
      name: 'domain-knows-no-http',
      comment: 'The domain never imports Express or the routes.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: HTTP },
    },
    {
      name: 'domain-knows-no-process',
      comment: 'The domain never imports a process or its loops.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: ENTRY_POINTS },
    },
    {
      name: 'job-declaration-knows-no-runner',
      comment: 'A queue declaration knows nothing of who runs it (consumers, workers/processors).',
      severity: 'error',
      from: { path: JOBS },
      to: { path: CONSUMERS },
    },
    {
      name: 'job-declaration-imports-no-services',
      comment: 'A queue declaration imports no services: producers import it only to enqueue.',
      severity: 'error',
      from: { path: JOBS },
      to: { path: ROOT },
    },
    {
      name: 'consumer-gets-a-context',
      comment: 'A consumer acts with its ConsumerContext, not with the composition root.',
      severity: 'error',
      from: { path: CONSUMERS },
      to: { path: ROOT },
    },
    {
      name: 'plumbing-knows-no-domain',
      comment: 'Configuration, lib, data and db serve every layer and know none of the domain.',
      severity: 'error',
      from: { path: PLUMBING },
      to: { path: DOMAIN },
    },
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
