-- DropIndex
DROP INDEX "approvals_expires_at_idx";

-- CreateIndex
CREATE INDEX "approvals_pending_expires_at_idx" ON "approvals"("expires_at") WHERE (status = 'pending');
