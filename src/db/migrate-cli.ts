// Usage: migrate-cli deploy | migrate-cli create <name> | migrate-cli resolve --applied <migration>   (database: $DATABASE_URL)
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  applyMigrations,
  generateNextMigrationSql,
  markMigrationApplied,
  migrationLockfile,
  migrationsDir,
  projectRoot,
} from './migrator.js';

const databaseUrl = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/approval_gate';

async function create(name: string | undefined): Promise<void> {
  if (!name || !/^\w+$/.test(name)) throw new Error('Usage: create <name>, the name made of letters, digits and _');
  const sql = await generateNextMigrationSql(databaseUrl);
  if (!sql) {
    console.log('prisma/schema.prisma matches the migrations: no migration created.');
    return;
  }
  const timestamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14); // UTC YYYYMMDDHHMMSS
  const dir = path.join(migrationsDir, `${timestamp}_${name}`);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'migration.sql'), sql);
  await writeFile(path.join(migrationsDir, migrationLockfile.path), migrationLockfile.content);
  console.log(`Created ${path.relative(projectRoot, path.join(dir, 'migration.sql'))}`);
}

async function main([command, ...args]: string[]): Promise<void> {
  if (command === 'deploy' && args.length === 0) {
    console.log(JSON.stringify({ applied: await applyMigrations(databaseUrl) }));
  } else if (command === 'create' && args.length <= 1) {
    await create(args[0]);
  } else if (command === 'resolve' && args.length === 2 && args[0] === '--applied') {
    console.log(JSON.stringify({ migration: args[1], recorded: await markMigrationApplied(databaseUrl, args[1]!) }));
  } else {
    throw new Error('Usage: migrate-cli deploy | migrate-cli create <name> | migrate-cli resolve --applied <migration>');
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`migrate-cli: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
