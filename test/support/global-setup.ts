import { applyMigrations } from '../../src/db/migrator.js';
import { databaseUrl, onServer, TEMPLATE_DATABASE } from './databases.js';

/**
 * Builds the template database once per run, from the real migrations; every test file then
 * clones it (CREATE DATABASE ... TEMPLATE), which takes milliseconds.
 */
export default async function setup(): Promise<void> {
  await onServer((client) => client.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`));
  await applyMigrations(databaseUrl(TEMPLATE_DATABASE));
}
