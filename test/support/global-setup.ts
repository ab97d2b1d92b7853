import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../src/db/migrator.js';
import { databaseUrl, onServer } from './databases.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
  }
}

/**
 * Builds a template database once per run, from the real migrations; every test file then clones
 * it (CREATE DATABASE ... TEMPLATE), which takes milliseconds. The name is the run's own, so two
 * runs on one machine never drop each other's template.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const template = `approval_gate_test_template_${randomBytes(4).toString('hex')}`;
  await applyMigrations(databaseUrl(template));
  project.provide('templateDatabase', template);
  return () => onServer((client) => client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)).then(() => undefined);
}
