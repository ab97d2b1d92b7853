-- Microsoft Teams as a decision channel, and Web Push to members' devices.

-- A policy that kept the default (every channel) keeps meaning every channel; one that listed
-- channels by hand keeps its list.
ALTER TABLE "policies" ALTER COLUMN "channels" SET DEFAULT ARRAY['api', 'console', 'email', 'slack', 'teams']::TEXT[];
ALTER TABLE "approvals" ALTER COLUMN "channels" SET DEFAULT ARRAY['api', 'console', 'email', 'slack', 'teams']::TEXT[];
UPDATE "policies" SET "channels" = ARRAY['api', 'console', 'email', 'slack', 'teams']::TEXT[]
WHERE "channels" = ARRAY['api', 'console', 'email', 'slack']::TEXT[];

ALTER TABLE "members" ADD COLUMN "teams_aad_object_id" TEXT;

ALTER TABLE "approval_notifications" ADD COLUMN "teams_conversation_id" TEXT,
ADD COLUMN "teams_activity_id" TEXT;

CREATE TABLE "teams_integrations" (
    "org_id" UUID NOT NULL,
    "app_id" TEXT NOT NULL,
    "app_secret" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "team_id" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "connected_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "teams_integrations_pkey" PRIMARY KEY ("org_id")
);
CREATE INDEX "teams_integrations_app_id_idx" ON "teams_integrations"("app_id");
ALTER TABLE "teams_integrations" ADD CONSTRAINT "teams_integrations_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "teams_link_tokens" (
    "token_hash" BYTEA NOT NULL,
    "org_id" UUID NOT NULL,
    "aad_object_id" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "teams_link_tokens_pkey" PRIMARY KEY ("token_hash")
);
CREATE INDEX "teams_link_tokens_expires_at_idx" ON "teams_link_tokens"("expires_at");

CREATE TABLE "push_subscriptions" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "member_id" UUID NOT NULL,
    "endpoint" TEXT NOT NULL,
    "p256dh" TEXT NOT NULL,
    "auth" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_subscriptions_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "push_subscriptions_endpoint_key" ON "push_subscriptions"("endpoint");
CREATE INDEX "push_subscriptions_member_id_idx" ON "push_subscriptions"("member_id");
ALTER TABLE "push_subscriptions" ADD CONSTRAINT "push_subscriptions_member_id_fkey" FOREIGN KEY ("member_id") REFERENCES "members"("id") ON DELETE CASCADE ON UPDATE CASCADE;
