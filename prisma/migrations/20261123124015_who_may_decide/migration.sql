-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "allow_self_approval" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "channels" TEXT[] DEFAULT ARRAY['api', 'console', 'email', 'slack']::TEXT[],
ADD COLUMN     "on_behalf_of" TEXT,
ADD COLUMN     "quorum" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "requested_by" JSONB,
ADD COLUMN     "reviewer_emails" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "reviewer_roles" TEXT[] DEFAULT ARRAY['reviewer', 'admin']::TEXT[];

-- CreateTable
CREATE TABLE "approval_votes" (
    "approval_id" UUID NOT NULL,
    "voter_key" TEXT NOT NULL,
    "voter" JSONB NOT NULL,
    "verdict" TEXT NOT NULL,
    "feedback" TEXT,
    "channel" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "approval_votes_pkey" PRIMARY KEY ("approval_id","voter_key")
);

-- AddForeignKey
ALTER TABLE "approval_votes" ADD CONSTRAINT "approval_votes_approval_id_fkey" FOREIGN KEY ("approval_id") REFERENCES "approvals"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Who created the approvals that existed before requested_by did, from their creation events.
UPDATE "approvals" a
SET "requested_by" = e."actor"::jsonb
FROM "audit_events" e
WHERE e."org_id" = a."org_id"
  AND e."type" = 'approval.created'
  AND e."data"::jsonb->>'approvalId' = a."id"::text;
-- AlterTable
ALTER TABLE "policies" ADD COLUMN     "allow_self_approval" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "channels" TEXT[] DEFAULT ARRAY['api', 'console', 'email', 'slack']::TEXT[],
ADD COLUMN     "quorum" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "reviewer_emails" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "reviewer_roles" TEXT[] DEFAULT ARRAY['reviewer', 'admin']::TEXT[];
