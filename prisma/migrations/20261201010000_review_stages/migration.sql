-- AlterTable
ALTER TABLE "policies" ADD COLUMN     "stages" JSONB;

-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "stages" JSONB,
ADD COLUMN     "stage" INTEGER NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "approval_votes" ADD COLUMN     "stage" INTEGER NOT NULL DEFAULT 1;
