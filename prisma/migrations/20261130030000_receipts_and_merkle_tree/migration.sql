-- The audit event that settled an approval, which its receipt names (docs/receipts.md).
ALTER TABLE "approvals" ADD COLUMN "receipt_seq" BIGINT;

-- Approvals settled before receipts: their latest settling event (the chain is the record of it).
UPDATE "approvals" a SET "receipt_seq" = s.seq
FROM (
  SELECT org_id, (data::jsonb->>'approvalId')::uuid AS approval_id, max(seq) AS seq
  FROM "audit_events"
  WHERE type IN ('approval.approved', 'approval.rejected', 'approval.expired', 'approval.escalated', 'approval.changes_requested')
  GROUP BY 1, 2
) s
WHERE a.id = s.approval_id AND a.org_id = s.org_id AND a.status <> 'pending';

-- Checkpoints carry the Merkle tree's root and the C2SP signed note; null on checkpoints signed before the tree.
ALTER TABLE "audit_checkpoints" ADD COLUMN "root_hash" TEXT,
ADD COLUMN "note" TEXT;

-- How many of an organization's audit events the Merkle tree covers so far.
CREATE TABLE "audit_trees" (
    "org_id" UUID NOT NULL,
    "size" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "audit_trees_pkey" PRIMARY KEY ("org_id")
);

-- Every complete subtree of the Merkle tree above the leaves: level h, index i covers the events
-- with seq in (i * 2^h, (i + 1) * 2^h]. Leaves are computed from audit_events.hash.
CREATE TABLE "audit_tree_nodes" (
    "org_id" UUID NOT NULL,
    "level" SMALLINT NOT NULL,
    "idx" BIGINT NOT NULL,
    "hash" BYTEA NOT NULL,

    CONSTRAINT "audit_tree_nodes_pkey" PRIMARY KEY ("org_id", "level", "idx")
);
