-- CreateEnum
CREATE TYPE "ApiKeyOwnerType" AS ENUM ('user', 'key');

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "owner_id" UUID,
ADD COLUMN     "owner_type" "ApiKeyOwnerType";

-- A key with an owner names both its kind and its id.
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_owner_check" CHECK (("owner_type" IS NULL) = ("owner_id" IS NULL));

-- Keys made before owners existed get theirs from the key.created event that recorded their
-- creation (docs/members-and-channels.md#principals): a key made by a member is the member's; a key
-- made by a key belongs to that key's principal, followed up the chain of makers to a member or to
-- a key without such an event (made by the CLI: a service key). A key without an event of its own
-- was made by the CLI and stays a service key. Each organization's events are read through its
-- (org_id, type, seq) index.
WITH RECURSIVE created AS (
  SELECT e.org_id, (e.data::jsonb ->> 'keyId')::uuid AS key_id, e.actor::jsonb AS maker
  FROM "organizations" o
  CROSS JOIN LATERAL (SELECT * FROM "audit_events" WHERE org_id = o.id AND type = 'key.created') e
),
owners (key_id, owner_type, owner_id) AS (
  SELECT c.key_id, 'user'::"ApiKeyOwnerType", (c.maker ->> 'id')::uuid FROM created c WHERE c.maker ->> 'type' = 'user'
  UNION ALL
  SELECT c.key_id, 'key'::"ApiKeyOwnerType", (c.maker ->> 'id')::uuid FROM created c
  WHERE c.maker ->> 'type' = 'api_key' AND NOT EXISTS (SELECT 1 FROM created m WHERE m.key_id = (c.maker ->> 'id')::uuid)
  UNION ALL
  SELECT c.key_id, o.owner_type, o.owner_id
  FROM owners o JOIN created c ON c.maker ->> 'type' = 'api_key' AND (c.maker ->> 'id')::uuid = o.key_id
)
UPDATE "api_keys" k SET "owner_type" = o.owner_type, "owner_id" = o.owner_id
FROM owners o JOIN created c ON c.key_id = o.key_id
WHERE k.id = o.key_id AND k.org_id = c.org_id;

-- A member's keys end with the member: those of members removed before this rule held are revoked now.
UPDATE "api_keys" k SET "revoked_at" = now()
WHERE k."owner_type" = 'user' AND k."revoked_at" IS NULL AND NOT EXISTS (SELECT 1 FROM "members" m WHERE m.id = k."owner_id");
