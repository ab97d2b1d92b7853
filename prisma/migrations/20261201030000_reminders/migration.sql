-- Reminders before a request expires (docs/members-and-channels.md#reminders): a policy may remind
-- the reviewers who have not voted, once after remindAfterSeconds and again every remindEverySeconds.
ALTER TABLE "policies" ADD COLUMN "remind_after_seconds" INTEGER,
ADD COLUMN "remind_every_seconds" INTEGER;

-- The next reminder of each pending revision whose policy reminds: one row per approval, moved on
-- to the next point once a point's reminders are sent, and removed after the last one.
CREATE TABLE "approval_reminders" (
    "approval_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "revision" INTEGER NOT NULL,
    "point" INTEGER NOT NULL DEFAULT 1,
    "due_at" TIMESTAMPTZ(3) NOT NULL,
    "every_seconds" INTEGER,

    CONSTRAINT "approval_reminders_pkey" PRIMARY KEY ("approval_id")
);
CREATE INDEX "approval_reminders_due_at_idx" ON "approval_reminders"("due_at");
ALTER TABLE "approval_reminders" ADD CONSTRAINT "approval_reminders_approval_id_fkey" FOREIGN KEY ("approval_id") REFERENCES "approvals"("id") ON DELETE CASCADE ON UPDATE CASCADE;
