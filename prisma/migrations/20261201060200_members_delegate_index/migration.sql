-- Who may decide asks, per approval, whether the voter stands in for someone: by delegate.
CREATE INDEX CONCURRENTLY IF NOT EXISTS members_delegate_id_idx ON members (delegate_id) WHERE delegate_id IS NOT NULL;
