// Generates the Prisma client into src/generated/prisma (not committed) on `npm install`.
// `prisma generate` never runs the native schema engine, but the CLI insists on locating one
// (and tries to download it) unless PRISMA_SCHEMA_ENGINE_BINARY names an existing executable;
// node itself is such a file on every machine.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');
const result = spawnSync(process.execPath, [prismaCli, 'generate'], {
  stdio: 'inherit',
  env: { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', ...process.env },
});
process.exit(result.status ?? 1);
