-- CreateEnum
CREATE TYPE "NotificationStatus" AS ENUM ('sending', 'sent', 'retry', 'uncertain');

-- CreateTable
CREATE TABLE "approval_notifications" (
    "approval_id" UUID NOT NULL,
    "channel" TEXT NOT NULL,
    "recipient" TEXT NOT NULL,
    "org_id" UUID NOT NULL,
    "status" "NotificationStatus" NOT NULL DEFAULT 'sending',
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "last_error" TEXT,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(3),
    "slack_channel_id" TEXT,
    "slack_ts" TEXT,

    CONSTRAINT "approval_notifications_pkey" PRIMARY KEY ("approval_id","channel","recipient")
);

-- CreateTable
CREATE TABLE "decision_links" (
    "token_hash" BYTEA NOT NULL,
    "org_id" UUID NOT NULL,
    "approval_id" UUID NOT NULL,
    "member_id" UUID NOT NULL,
    "verdict" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "decision_links_pkey" PRIMARY KEY ("token_hash")
);

-- CreateTable
CREATE TABLE "slack_integrations" (
    "org_id" UUID NOT NULL,
    "team_id" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "bot_token" TEXT NOT NULL,
    "signing_secret" TEXT NOT NULL,
    "connected_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "slack_integrations_pkey" PRIMARY KEY ("org_id")
);

-- CreateTable
CREATE TABLE "slack_link_tokens" (
    "token_hash" BYTEA NOT NULL,
    "org_id" UUID NOT NULL,
    "team_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "slack_link_tokens_pkey" PRIMARY KEY ("token_hash")
);

-- CreateIndex
CREATE INDEX "decision_links_expires_at_idx" ON "decision_links"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "decision_links_approval_id_member_id_verdict_key" ON "decision_links"("approval_id", "member_id", "verdict");

-- CreateIndex
CREATE INDEX "slack_link_tokens_expires_at_idx" ON "slack_link_tokens"("expires_at");

-- AddForeignKey
ALTER TABLE "approval_notifications" ADD CONSTRAINT "approval_notifications_approval_id_fkey" FOREIGN KEY ("approval_id") REFERENCES "approvals"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "decision_links" ADD CONSTRAINT "decision_links_approval_id_fkey" FOREIGN KEY ("approval_id") REFERENCES "approvals"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "decision_links" ADD CONSTRAINT "decision_links_member_id_fkey" FOREIGN KEY ("member_id") REFERENCES "members"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "slack_integrations" ADD CONSTRAINT "slack_integrations_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
