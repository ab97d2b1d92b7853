-- A member may name a delegate to decide in their place for a period (docs/members-and-channels.md#delegation).
-- Expand only: new nullable columns; the previous release ignores them.
ALTER TABLE members
  ADD COLUMN delegate_id uuid REFERENCES members (id) ON DELETE SET NULL,
  ADD COLUMN delegation_starts_at timestamptz(3),
  ADD COLUMN delegation_ends_at timestamptz(3);
