-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "revision" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "revisions" JSONB NOT NULL DEFAULT '[]',
ADD COLUMN     "suggested_payload" JSONB;

-- Every approval made before revisions existed is its own revision 1 (docs/api.md#revisions).
UPDATE "approvals" SET "revisions" = jsonb_build_array(jsonb_build_object(
  'revision', 1, 'payloadHash', "payload_hash", 'note', NULL, 'feedback', NULL, 'requestedBy', NULL,
  'at', to_char("created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));

-- AlterTable
ALTER TABLE "approval_notifications" DROP CONSTRAINT "approval_notifications_pkey",
ADD COLUMN     "revision" INTEGER NOT NULL DEFAULT 1,
ADD CONSTRAINT "approval_notifications_pkey" PRIMARY KEY ("approval_id", "revision", "channel", "recipient");

-- AlterTable
ALTER TABLE "decision_links" ADD COLUMN     "revision" INTEGER NOT NULL DEFAULT 1;

-- A request waiting for a revision keeps its deadline, and expires at it as a pending one does.
DROP INDEX "approvals_pending_expires_at_idx";
CREATE INDEX "approvals_pending_expires_at_idx" ON "approvals"("expires_at") WHERE (status IN ('pending', 'changes_requested'));
