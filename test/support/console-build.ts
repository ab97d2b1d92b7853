import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildConsole } from '../../src/cli/build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The reviewer console built from the working tree, for test apps to serve (CONSOLE_DIR). */
    consoleDir: string;
  }
}

const OUTPUT = path.resolve(import.meta.dirname, '../../node_modules/.cache/approval-gate-console/dist');

/**
 * Builds the console once per test run, and not at all when none of the files the last build was
 * made from changed (the usual case when working on the API): the build takes seconds on this
 * machine's two cores, the check milliseconds. `npm run dev` builds dist/console the same way.
 */
export default async function setup(project: TestProject): Promise<void> {
  await buildConsole(OUTPUT);
  project.provide('consoleDir', OUTPUT);
}
