-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "owner_unknown" BOOLEAN NOT NULL DEFAULT false;

-- A key whose owner is unknown has no owner recorded either.
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_owner_unknown_check" CHECK (NOT "owner_unknown" OR "owner_type" IS NULL);

-- Keys made before owners existed whose maker nobody recorded (docs/members-and-channels.md#keys-made-before-owners):
-- before 20261128202555_key_owners neither POST /v1/keys nor the CLI wrote a key.created event, so
-- such a key may be an admin's as well as a service key, and is neither until key:attribute says
-- whose it is. A key made after that migration finished with no owner and no event was made by the
-- CLI of that release: a service key, as it was then. Without the engine's record of that migration
-- (never the case under the release step), every such key is unknown rather than a service key.
UPDATE "api_keys" k SET "owner_unknown" = true
WHERE k."owner_type" IS NULL
  AND k."created_at" < coalesce(
    (SELECT max("finished_at") FROM "_prisma_migrations"
     WHERE "migration_name" = '20261128202555_key_owners' AND "rolled_back_at" IS NULL),
    'infinity')
  AND NOT EXISTS (
    SELECT 1 FROM "audit_events" e
    WHERE e.org_id = k.org_id AND e.type = 'key.created' AND (e.data::jsonb ->> 'keyId') = k.id::text);
