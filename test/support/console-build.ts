import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build, type Plugin } from 'vite';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The reviewer console built from the working tree, for test apps to serve (CONSOLE_DIR). */
    consoleDir: string;
  }
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'approval-gate-console');
const OUTPUT = path.join(CACHE, 'dist');
const MANIFEST = path.join(CACHE, 'inputs.json');

/** Inputs beyond the modules a build bundles: dependency versions, and every file of the console's folder (config, public files). */
async function fixedInputs(): Promise<string[]> {
  const files = await readdir(path.join(ROOT, 'src/console'), { recursive: true, withFileTypes: true });
  return [
    'package-lock.json',
    ...files.filter((file) => file.isFile()).map((file) => path.relative(ROOT, path.join(file.parentPath, file.name))),
  ];
}

async function digest(file: string): Promise<string | null> {
  try {
    return createHash('sha256')
      .update(await readFile(path.join(ROOT, file)))
      .digest('hex');
  } catch {
    return null;
  }
}

async function digests(files: readonly string[]): Promise<Record<string, string | null>> {
  return Object.fromEntries(await Promise.all(files.map(async (file) => [file, await digest(file)] as const)));
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
 * Builds the console once per test run, and not at all when none of the files the last build was
 * made from changed (the usual case when working on the API): the build takes seconds on this
 * machine's two cores, the check milliseconds.
 */
export default async function setup(project: TestProject): Promise<void> {
  const previous = existsSync(MANIFEST) ? (JSON.parse(await readFile(MANIFEST, 'utf8')) as Record<string, string | null>) : null;
  const fixed = await fixedInputs();
  const unchanged =
    previous !== null &&
    existsSync(path.join(OUTPUT, 'index.html')) &&
    JSON.stringify(await digests([...new Set([...Object.keys(previous), ...fixed])].sort())) === JSON.stringify(previous);
  if (!unchanged) {
    const inputs = new Set<string>(fixed);
    const staging = `${OUTPUT}.${process.pid}`;
    // Vite takes a NODE_ENV that is already set (vitest sets `test`) over the mode: React would be its development build.
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    await build({
      configFile: path.join(ROOT, 'src/console/vite.config.ts'),
      logLevel: 'warn',
      plugins: [recordInputs(inputs)],
      build: { outDir: staging, emptyOutDir: true },
    }).finally(() => (process.env.NODE_ENV = nodeEnv));
    await rm(OUTPUT, { recursive: true, force: true });
    await mkdir(CACHE, { recursive: true });
    await rename(staging, OUTPUT);
    await writeFile(MANIFEST, JSON.stringify(await digests([...inputs].sort())));
  }
  project.provide('consoleDir', OUTPUT);
}
