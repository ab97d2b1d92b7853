-- DropIndex
DROP INDEX "webhook_deliveries_status_next_attempt_at_idx";

-- CreateIndex
CREATE INDEX "webhook_deliveries_pending_next_attempt_at_idx" ON "webhook_deliveries"("next_attempt_at") WHERE (status = 'pending');
