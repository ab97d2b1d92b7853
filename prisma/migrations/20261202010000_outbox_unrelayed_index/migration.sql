-- The relay's claim reads the rows not relayed yet in id order (docs/operations.md, releases that overlap: built CONCURRENTLY, alone).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "outbox_messages_unrelayed_idx" ON "outbox_messages"("id") WHERE (relayed_at IS NULL);
