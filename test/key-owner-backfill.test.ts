import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir, sqlFunctionsDir } from '../src/db/migrator.js';
import { applySqlFunctions, readSqlFunctions } from '../src/db/sql-functions.js';
import type { ApiKey } from '../src/generated/prisma/client.js';
import { serializeAuditEvent, type Actor } from '../src/modules/audit/audit-events.js';
import { keyEvent } from '../src/modules/orgs/api-keys.js';
import { databaseUrl, onServer } from './support/databases.js';

/** The migration that gives keys their owners; the database starts at the one before it. */
const BACKFILL = '20261128202555_key_owners';

const databases: string[] = [];
let names: string[];
let client: pg.Client;

/**
 * Applies the migrations in order, each as the release step runs it: one script, recorded in
 * `_prisma_migrations` as the engine records it once the script has run.
 */
async function applyMigrationFiles(db: pg.Client, migrations: string[]): Promise<void> {
  for (const name of migrations) {
    await db.query(await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8'));
    await db.query(
      `INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
       VALUES ($1, 'test', $2, clock_timestamp(), clock_timestamp(), 1)`,
      [randomUUID(), name],
    );
  }
}

/** A new database migrated up to the one before BACKFILL, with the engine's bookkeeping table. */
async function legacyDatabase(): Promise<pg.Client> {
  const database = `approval_gate_test_backfill_${randomBytes(6).toString('hex')}`;
  databases.push(database);
  await onServer((server) => server.query(`CREATE DATABASE ${database}`));
  const db = new pg.Client({ connectionString: databaseUrl(database) });
  await db.connect();
  // The table prisma migrate deploy keeps (as its schema engine creates it).
  await db.query(`CREATE TABLE _prisma_migrations (
    id VARCHAR(36) PRIMARY KEY NOT NULL, checksum VARCHAR(64) NOT NULL, finished_at TIMESTAMPTZ,
    migration_name VARCHAR(255) NOT NULL, logs TEXT, rolled_back_at TIMESTAMPTZ,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_steps_count INTEGER NOT NULL DEFAULT 0)`);
  await applyMigrationFiles(
    db,
    names.filter((name) => name < BACKFILL),
  );
  return db;
}

const clients: pg.Client[] = [];
beforeAll(async () => {
  names = (await readdir(migrationsDir, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  expect(names).toContain(BACKFILL);
  client = await legacyDatabase();
  clients.push(client);
});
afterAll(async () => {
  await Promise.all(clients.map((db) => db.end()));
  await onServer(async (server) => {
    for (const database of databases) await server.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });
});

describe(`migration ${BACKFILL}`, () => {
  it('gives keys made before owners existed the principal of the actor that made them, and leaves CLI keys service keys', async () => {
    const org = randomUUID();
    const otherOrg = randomUUID();
    for (const id of [org, otherOrg]) {
      await client.query(`INSERT INTO organizations (id, name, plan, admin_emails) VALUES ($1, 'acme', 'pro', '{}')`, [id]);
    }
    const admin = randomUUID();
    const removedMember = randomUUID();
    await client.query(
      `INSERT INTO members (id, org_id, email, email_key, role) VALUES ($1, $2, 'ada@acme.test', 'ada@acme.test', 'admin')`,
      [admin, org],
    );

    const keys: Record<string, string> = {};
    const addKey = async (name: string, orgId = org) => {
      keys[name] = randomUUID();
      await client.query(`INSERT INTO api_keys (id, org_id, name, scopes, key_hash) VALUES ($1, $2, $3, '{approvals:read}', $4)`, [
        keys[name],
        orgId,
        name,
        randomBytes(32),
      ]);
    };
    let seq = 0;
    /** The key.created event as the service writes it, the old rows' way: as it appended them, without owners. */
    const recordCreation = async (name: string, maker: Actor, orgId = org) => {
      const key = { id: keys[name]!, name, scopes: ['approvals:read'], ownerType: null, ownerId: null } as unknown as ApiKey;
      const event = serializeAuditEvent(keyEvent('key.created', maker, key));
      seq += 1;
      await client.query(
        `INSERT INTO audit_events (org_id, seq, type, actor, data, created_at, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, now(), 'x', 'y')`,
        [orgId, seq, event.type, event.actor, event.data],
      );
    };

    // Made by the CLI: no event.
    await addKey('service');
    await addKey('untracked');
    // A member's key, and a key that key made: both the member's.
    await addKey('byAdmin');
    await recordCreation('byAdmin', { type: 'user', id: admin, email: 'ada@acme.test' });
    await addKey('byAdminsKey');
    await recordCreation('byAdminsKey', { type: 'api_key', id: keys.byAdmin! });
    // Made by a service key, and by a key it made: both the service key's.
    await addKey('byService');
    await recordCreation('byService', { type: 'api_key', id: keys.service! });
    await addKey('byServicesKey');
    await recordCreation('byServicesKey', { type: 'api_key', id: keys.byService! });
    // Made by a member removed since: theirs, and revoked, as their removal would now.
    await addKey('byRemoved');
    await recordCreation('byRemoved', { type: 'user', id: removedMember, email: 'gone@acme.test' });
    // Another organization's chain cannot give this organization's key an owner.
    await addKey('foreign');
    await recordCreation('foreign', { type: 'user', id: admin, email: 'ada@acme.test' }, otherOrg);

    await applyMigrationFiles(client, [BACKFILL]);

    const { rows } = await client.query<{ name: string; owner_type: string | null; owner_id: string | null; revoked: boolean }>(
      'SELECT name, owner_type, owner_id, revoked_at IS NOT NULL AS revoked FROM api_keys',
    );
    const owners = Object.fromEntries(rows.map((row) => [row.name, [row.owner_type, row.owner_id, row.revoked]]));
    expect(owners).toEqual({
      service: [null, null, false],
      untracked: [null, null, false],
      byAdmin: ['user', admin, false],
      byAdminsKey: ['user', admin, false],
      byService: ['key', keys.service, false],
      byServicesKey: ['key', keys.service, false],
      byRemoved: ['user', removedMember, true],
      foreign: [null, null, false],
    });
  });

  it('refuses an owner without its kind, or a kind without its owner', async () => {
    const [{ id }] = (await client.query<{ id: string }>('SELECT id FROM api_keys LIMIT 1')).rows as [{ id: string }];
    await expect(client.query(`UPDATE api_keys SET owner_type = 'user', owner_id = NULL WHERE id = $1`, [id])).rejects.toThrow(
      /api_keys_owner_check/,
    );
    await expect(client.query(`UPDATE api_keys SET owner_type = NULL, owner_id = $1 WHERE id = $1`, [id])).rejects.toThrow(
      /api_keys_owner_check/,
    );
  });
});

describe('upgrading past the key owners', () => {
  it('a key made before owners existed, with no record of its maker, is not a service key: its principal is unknown until attributed', async () => {
    const db = await legacyDatabase();
    clients.push(db);
    const org = randomUUID();
    await db.query(`INSERT INTO organizations (id, name, plan, admin_emails) VALUES ($1, 'acme', 'pro', '{}')`, [org]);
    const keys: Record<string, string> = {};
    const addKey = async (name: string) => {
      keys[name] = randomUUID();
      await db.query(`INSERT INTO api_keys (id, org_id, name, scopes, key_hash) VALUES ($1, $2, $3, '{approvals:decide,keys:write}', $4)`, [
        keys[name],
        org,
        name,
        randomBytes(32),
      ]);
    };
    // Before owners existed neither POST /v1/keys nor the CLI recorded who made a key: an admin's
    // key and a CLI key are the same row.
    await addKey('mintedByAdmin');
    await addKey('madeByCli');
    await applyMigrationFiles(db, [BACKFILL]);
    // api_keys.created_at keeps milliseconds, rounded: a key made within the millisecond the
    // migration finished may read as made before it.
    await new Promise((resolve) => setTimeout(resolve, 2));
    // Once owners exist, POST /v1/keys stores its owner, and a key the CLI makes is a service key.
    await addKey('cliAfterOwners');
    // ...and a key made with the admin's old key belongs to that key's principal, unknown as it is.
    await addKey('mintedByLegacyKey');
    await db.query(`UPDATE api_keys SET owner_type = 'key', owner_id = $1 WHERE id = $2`, [keys.mintedByAdmin, keys.mintedByLegacyKey]);
    await applyMigrationFiles(
      db,
      names.filter((name) => name > BACKFILL),
    );
    await applySqlFunctions(databaseUrl(db.database!), await readSqlFunctions(sqlFunctionsDir));

    const principal = async (name: string) =>
      (
        await db.query<{ principal: unknown }>(
          `SELECT ag_principal_of(jsonb_build_object('type', 'api_key', 'id', $1::text)) AS principal`,
          [keys[name]],
        )
      ).rows[0]!.principal;
    expect(await principal('mintedByAdmin')).toEqual({ type: 'unattributed', id: keys.mintedByAdmin });
    expect(await principal('madeByCli')).toEqual({ type: 'unattributed', id: keys.madeByCli });
    expect(await principal('cliAfterOwners')).toEqual({ type: 'api_key', id: keys.cliAfterOwners });
    expect(await principal('mintedByLegacyKey')).toEqual({ type: 'unattributed', id: keys.mintedByAdmin });
    const { rows } = await db.query<{ name: string; owner_unknown: boolean }>('SELECT name, owner_unknown FROM api_keys ORDER BY name');
    expect(Object.fromEntries(rows.map((row) => [row.name, row.owner_unknown]))).toEqual({
      cliAfterOwners: false,
      madeByCli: true,
      mintedByAdmin: true,
      mintedByLegacyKey: false,
    });
    await expect(db.query(`UPDATE api_keys SET owner_type = 'user', owner_id = $1 WHERE id = $1`, [keys.mintedByAdmin])).rejects.toThrow(
      /api_keys_owner_unknown_check/,
    );
  });

  it('without the engine’s record of the key_owners migration, every key without an owner or a key.created event is unknown', async () => {
    const db = await legacyDatabase();
    clients.push(db);
    const org = randomUUID();
    await db.query(`INSERT INTO organizations (id, name, plan, admin_emails) VALUES ($1, 'acme', 'pro', '{}')`, [org]);
    await applyMigrationFiles(db, [BACKFILL]);
    const key = randomUUID();
    await db.query(`INSERT INTO api_keys (id, org_id, scopes, key_hash) VALUES ($1, $2, '{approvals:read}', $3)`, [
      key,
      org,
      randomBytes(32),
    ]);
    await db.query('DELETE FROM _prisma_migrations WHERE migration_name = $1', [BACKFILL]);
    await applyMigrationFiles(
      db,
      names.filter((name) => name > BACKFILL),
    );
    const { rows } = await db.query<{ owner_unknown: boolean }>('SELECT owner_unknown FROM api_keys WHERE id = $1', [key]);
    expect(rows).toEqual([{ owner_unknown: true }]);
  });
});
