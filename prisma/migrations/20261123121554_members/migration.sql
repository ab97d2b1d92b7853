-- CreateEnum
CREATE TYPE "MemberRole" AS ENUM ('admin', 'reviewer', 'viewer');

-- CreateTable
CREATE TABLE "members" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "email_key" TEXT NOT NULL,
    "name" TEXT,
    "role" "MemberRole" NOT NULL,
    "password_hash" TEXT,
    "email_notifications" BOOLEAN NOT NULL DEFAULT true,
    "slack_team_id" TEXT,
    "slack_user_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_sign_in_at" TIMESTAMPTZ(3),

    CONSTRAINT "members_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "member_invites" (
    "token_hash" BYTEA NOT NULL,
    "member_id" UUID NOT NULL,
    "sent_for_event" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "member_invites_pkey" PRIMARY KEY ("token_hash")
);

-- CreateTable
CREATE TABLE "sessions" (
    "id" UUID NOT NULL,
    "token_hash" BYTEA NOT NULL,
    "member_id" UUID NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sign_in_failures" (
    "id" BIGSERIAL NOT NULL,
    "email_key" TEXT NOT NULL,
    "failed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_failures_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "members_email_key_idx" ON "members"("email_key");

-- CreateIndex
CREATE UNIQUE INDEX "members_org_id_email_key_key" ON "members"("org_id", "email_key");

-- CreateIndex
CREATE UNIQUE INDEX "members_org_id_slack_team_id_slack_user_id_key" ON "members"("org_id", "slack_team_id", "slack_user_id");

-- CreateIndex
CREATE UNIQUE INDEX "member_invites_sent_for_event_key" ON "member_invites"("sent_for_event");

-- CreateIndex
CREATE INDEX "member_invites_member_id_idx" ON "member_invites"("member_id");

-- CreateIndex
CREATE UNIQUE INDEX "sessions_token_hash_key" ON "sessions"("token_hash");

-- CreateIndex
CREATE INDEX "sessions_member_id_idx" ON "sessions"("member_id");

-- CreateIndex
CREATE INDEX "sign_in_failures_email_key_failed_at_idx" ON "sign_in_failures"("email_key", "failed_at");

-- AddForeignKey
ALTER TABLE "members" ADD CONSTRAINT "members_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "member_invites" ADD CONSTRAINT "member_invites_member_id_fkey" FOREIGN KEY ("member_id") REFERENCES "members"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_member_id_fkey" FOREIGN KEY ("member_id") REFERENCES "members"("id") ON DELETE CASCADE ON UPDATE CASCADE;
