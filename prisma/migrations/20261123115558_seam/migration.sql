-- CreateEnum
CREATE TYPE "ConsumerTaskStatus" AS ENUM ('pending', 'done', 'failed');

-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "decided_by" JSONB,
ADD COLUMN     "payload_hash" TEXT;

-- AlterTable
ALTER TABLE "outbox_messages" ADD COLUMN     "audit_seq" BIGINT,
ALTER COLUMN "body" DROP NOT NULL;

-- CreateTable
CREATE TABLE "consumer_tasks" (
    "event_id" UUID NOT NULL,
    "consumer" TEXT NOT NULL,
    "org_id" UUID NOT NULL,
    "status" "ConsumerTaskStatus" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "consumer_tasks_pkey" PRIMARY KEY ("event_id","consumer")
);

-- CreateIndex
CREATE INDEX "consumer_tasks_status_created_at_idx" ON "consumer_tasks"("status", "created_at");

-- CreateIndex
CREATE INDEX "approvals_org_id_created_at_id_idx" ON "approvals"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "approvals_org_id_status_created_at_id_idx" ON "approvals"("org_id", "status", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "approvals_org_id_action_created_at_id_idx" ON "approvals"("org_id", "action", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "approvals_org_id_agent_created_at_id_idx" ON "approvals"("org_id", "agent", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "approvals_org_id_policy_key_created_at_id_idx" ON "approvals"("org_id", "policy_key", "created_at" DESC, "id" DESC);

-- Who decided the approvals settled before decided_by existed, read from their audit events.
UPDATE "approvals" a
SET "decided_by" = CASE WHEN e."data"::jsonb->>'decidedBy' = 'policy'
                        THEN jsonb_build_object('type', 'policy', 'id', a."policy_key")
                        ELSE e."actor"::jsonb END
FROM "audit_events" e
WHERE a."status" IN ('approved', 'rejected')
  AND e."org_id" = a."org_id"
  AND e."type" IN ('approval.approved', 'approval.rejected')
  AND e."data"::jsonb->>'approvalId' = a."id"::text;
