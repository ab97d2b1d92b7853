-- AlterTable
ALTER TABLE "policies" ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "policy_outcome" TEXT,
ADD COLUMN     "policy_version" INTEGER;

-- CreateTable
CREATE TABLE "policy_versions" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "document" JSONB NOT NULL,
    "changed_by" JSONB NOT NULL,
    "policy_created_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "policy_versions_pkey" PRIMARY KEY ("org_id","key","version")
);

-- CreateTable
CREATE TABLE "policy_version_counters" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "last_version" INTEGER NOT NULL,

    CONSTRAINT "policy_version_counters_pkey" PRIMARY KEY ("org_id","key")
);

-- AddForeignKey
ALTER TABLE "policy_versions" ADD CONSTRAINT "policy_versions_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "policy_version_counters" ADD CONSTRAINT "policy_version_counters_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Every policy stored before versions existed is its version 1, written by nobody the service knew.
INSERT INTO "policy_versions" ("org_id", "key", "version", "document", "changed_by", "policy_created_at", "created_at")
SELECT "org_id", "key", 1,
       jsonb_build_object('rules', "rules", 'defaultOutcome', "default_outcome", 'timeoutSeconds', "timeout_seconds",
         'onTimeout', "on_timeout", 'escalateTo', "escalate_to",
         'reviewers', jsonb_build_object('roles', to_jsonb("reviewer_roles"), 'members', to_jsonb("reviewer_emails")),
         'quorum', "quorum", 'allowSelfApproval', "allow_self_approval", 'channels', to_jsonb("channels")),
       '{"type":"system","id":"migration"}'::jsonb, "created_at", "updated_at"
FROM "policies";
INSERT INTO "policy_version_counters" ("org_id", "key", "last_version") SELECT "org_id", "key", 1 FROM "policies";

-- What the policy said of each approval made before versions existed, from its creation's (or
-- latest revision's) audit event: what a replay compares a draft with. Orphans keep NULL.
UPDATE "approvals" AS a SET "policy_outcome" = e.outcome
FROM (
  SELECT DISTINCT ON (org_id, data::jsonb->>'approvalId') org_id, (data::jsonb->>'approvalId')::uuid AS id, data::jsonb->>'outcome' AS outcome
  FROM "audit_events" WHERE type IN ('approval.created', 'approval.revised')
  ORDER BY org_id, data::jsonb->>'approvalId', seq DESC
) AS e
WHERE a.org_id = e.org_id AND a.id = e.id AND e.outcome IS NOT NULL;
