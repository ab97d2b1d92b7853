-- CreateEnum
CREATE TYPE "Plan" AS ENUM ('free', 'pro', 'enterprise');

-- CreateEnum
CREATE TYPE "ApprovalStatus" AS ENUM ('pending', 'approved', 'rejected', 'expired', 'escalated');

-- CreateEnum
CREATE TYPE "TimeoutAction" AS ENUM ('expire', 'escalate');

-- CreateTable
CREATE TABLE "organizations" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "plan" "Plan" NOT NULL,
    "admin_emails" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organizations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT,
    "scopes" TEXT[],
    "key_hash" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "policies" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "rules" JSONB NOT NULL,
    "default_outcome" TEXT NOT NULL,
    "timeout_seconds" INTEGER NOT NULL,
    "on_timeout" "TimeoutAction" NOT NULL,
    "escalate_to" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "policies_pkey" PRIMARY KEY ("org_id","key")
);

-- CreateTable
CREATE TABLE "approvals" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "status" "ApprovalStatus" NOT NULL,
    "action" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "context" JSONB,
    "agent" TEXT,
    "policy_key" TEXT NOT NULL,
    "idempotency_key" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3),
    "on_timeout" "TimeoutAction" NOT NULL,
    "escalate_to" TEXT,
    "verdict" TEXT,
    "feedback" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "escalated_from" UUID,
    "escalated_to" UUID,

    CONSTRAINT "approvals_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "monthly_usage" (
    "org_id" UUID NOT NULL,
    "month" TEXT NOT NULL,
    "approvals" INTEGER NOT NULL,

    CONSTRAINT "monthly_usage_pkey" PRIMARY KEY ("org_id","month")
);

-- CreateTable
CREATE TABLE "audit_chain_heads" (
    "org_id" UUID NOT NULL,
    "seq" BIGINT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_chain_heads_pkey" PRIMARY KEY ("org_id")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "org_id" UUID NOT NULL,
    "seq" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "action" TEXT,
    "agent" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "prev_hash" TEXT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("org_id","seq")
);

-- CreateTable
CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    "body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "relayed_at" TIMESTAMPTZ(3),

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_org_id_idx" ON "api_keys"("org_id");

-- CreateIndex
CREATE INDEX "approvals_expires_at_idx" ON "approvals"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "approvals_org_id_idempotency_key_key" ON "approvals"("org_id", "idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "outbox_messages_event_id_key" ON "outbox_messages"("event_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "policies" ADD CONSTRAINT "policies_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "audit_chain_heads" ADD CONSTRAINT "audit_chain_heads_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
