-- Replaced by outbox_messages_unrelayed_idx; dropped CONCURRENTLY, alone, as it was built.
DROP INDEX CONCURRENTLY IF EXISTS "outbox_messages_relayed_at_id_idx";
