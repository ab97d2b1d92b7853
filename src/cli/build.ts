// `node src/cli/build.ts [server|console|all]`: builds what is out of date, and nothing when no
// input changed since the last build, so that `npm run dev` and `npm run cli` start in seconds.
// `npm run build` (the image, `npm pack`) builds everything from scratch instead.
//
// Run by Node itself (its TypeScript type stripping), never through a compiler: erasable syntax
// only, and no import of the project's own modules.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from 'vite';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'approval-gate');

type Manifest = Record<string, string | null>;

async function digest(file: string): Promise<string | null> {
  try {
    return createHash('sha256')
      .update(await readFile(path.join(ROOT, file)))
      .digest('hex');
  } catch {
    return null;
  }
}

async function digests(files: Iterable<string>): Promise<Manifest> {
  const sorted = [...new Set(files)].sort();
  return Object.fromEntries(await Promise.all(sorted.map(async (file) => [file, await digest(file)] as const)));
}

/** Every file under `folder` (relative to the root), `skip` folders left out. */
async function filesUnder(folder: string, skip: readonly string[] = []): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, folder), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
    .filter((file) => !skip.some((folder) => file.startsWith(`${folder}${path.sep}`)));
}

/**
 * Whether the build recorded in `manifestFile` is current: its output exists and every file it
 * was made from (and every one of `inputs`, which may be new) has the same content.
 */
async function isCurrent(manifestFile: string, output: string, inputs: readonly string[]): Promise<boolean> {
  if (!existsSync(manifestFile) || !existsSync(output)) return false;
  const previous = JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest;
  const now = await digests([...Object.keys(previous), ...inputs]);
  return Object.entries(now).every(([file, hash]) => hash === (previous[file] ?? null));
}

async function record(manifestFile: string, inputs: Iterable<string>): Promise<void> {
  await mkdir(path.dirname(manifestFile), { recursive: true });
  await writeFile(manifestFile, JSON.stringify(await digests(inputs)));
}

const SERVER_MANIFEST = path.join(CACHE, 'server-inputs.json');
const SERVER_BUILD_INFO = path.join(CACHE, 'server.tsbuildinfo');

/** What the server's compilation reads: its sources (the console has its own build), the generated Prisma client, the compiler settings, the dependencies. */
async function serverInputs(): Promise<string[]> {
  return [
    ...(await filesUnder('src', [path.join('src', 'console')])),
    ...(await filesUnder('workers')),
    'tsconfig.json',
    'tsconfig.build.json',
    'package-lock.json',
  ];
}

/** Compiles src/ and workers/ into dist/ with tsc, incrementally, unless no input changed. Returns whether it compiled. */
export async function buildServer(): Promise<boolean> {
  const inputs = await serverInputs();
  if (await isCurrent(SERVER_MANIFEST, path.join(ROOT, 'dist', 'src', 'server.js'), inputs)) return false;
  // tsc trusts its build info over the output: without the output, it must start afresh.
  if (!existsSync(path.join(ROOT, 'dist', 'src', 'server.js'))) await rm(SERVER_BUILD_INFO, { force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', SERVER_BUILD_INFO], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error(`tsc failed (exit ${result.status ?? result.signal})`);
  await record(SERVER_MANIFEST, inputs);
  return true;
}

/** Records every source file of the working tree that the bundle was built from. */
function recordInputs(into: Set<string>): Plugin {
  return {
    name: 'record-console-inputs',
    moduleParsed(module) {
      const file = module.id.split('?')[0]!;
      if (path.isAbsolute(file) && file.startsWith(ROOT) && !file.includes(`${path.sep}node_modules${path.sep}`)) {
        into.add(path.relative(ROOT, file));
      }
    },
  };
}

/**
 * Builds the reviewer console into `outDir` with Vite, unless none of the files the last build
 * there was made from changed: every module it bundled, every file of its folder (config, public
 * files), and the dependencies' versions. Returns whether it built.
 */
export async function buildConsole(outDir: string): Promise<boolean> {
  const manifestFile = `${outDir}.inputs.json`;
  const fixed = ['package-lock.json', ...(await filesUnder(path.join('src', 'console')))];
  if (await isCurrent(manifestFile, path.join(outDir, 'index.html'), fixed)) return false;
  const inputs = new Set<string>(fixed);
  const staging = `${outDir}.${process.pid}`;
  const { build } = await import('vite');
  // Vite takes a NODE_ENV that is already set (vitest sets `test`) over the mode: React would be its development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      configFile: path.join(ROOT, 'src/console/vite.config.ts'),
      logLevel: 'warn',
      plugins: [recordInputs(inputs)],
      build: { outDir: staging, emptyOutDir: true },
    });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  await rm(outDir, { recursive: true, force: true });
  await mkdir(path.dirname(outDir), { recursive: true });
  await rename(staging, outDir);
  await record(manifestFile, inputs);
  return true;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const what = process.argv[2] ?? 'all';
  if (!['server', 'console', 'all'].includes(what)) {
    console.error('Usage: node src/cli/build.ts [server|console|all]');
    process.exit(2);
  }
  try {
    if (what !== 'console' && (await buildServer())) console.error('built the server (tsc)');
    if (what !== 'server' && (await buildConsole(path.join(ROOT, 'dist', 'console')))) console.error('built the console (vite)');
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
