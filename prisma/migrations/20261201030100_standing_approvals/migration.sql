-- Standing approvals (docs/policies.md#standing-approvals): a policy may let a reviewer approve a
-- request and the same again for a while; each grant is a row, revocable, that approves matching
-- new requests at their creation.
ALTER TABLE "policies" ADD COLUMN "standing_approval_max_seconds" INTEGER;

CREATE TABLE "standing_approvals" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "policy_key" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "agent" TEXT,
    "requester_key" TEXT NOT NULL,
    "payload_hash" TEXT,
    "payload_fields" JSONB,
    "granted_by" JSONB NOT NULL,
    "channel" TEXT NOT NULL,
    "source_approval_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "revoked_by" JSONB,

    CONSTRAINT "standing_approvals_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "standing_approvals_match_idx" ON "standing_approvals"("org_id", "policy_key", "action", "expires_at");
ALTER TABLE "standing_approvals" ADD CONSTRAINT "standing_approvals_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
