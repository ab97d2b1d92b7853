// Generates the Prisma client into src/generated/prisma (not committed) on `npm install`.
// `prisma generate` never runs the native schema engine, but the CLI insists on locating one
// (and tries to download it) unless PRISMA_SCHEMA_ENGINE_BINARY names an existing executable;
// node itself is such a file on every machine.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

let prismaCli;
try {
  prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');
} catch {
  // The prisma CLI is a development dependency: an install without them (a built package, the
  // image's runtime) runs the client compiled into dist/ and has nothing to generate.
  console.error('prisma (a development dependency) is not installed: the Prisma client is not generated.');
  process.exit(0);
}
const result = spawnSync(process.execPath, [prismaCli, 'generate'], {
  stdio: 'inherit',
  env: { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', ...process.env },
});
process.exit(result.status ?? 1);
