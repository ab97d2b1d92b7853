-- AlterTable
ALTER TABLE "policies" ADD COLUMN     "shadow" JSONB,
ADD COLUMN     "shadow_since" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "approvals" ADD COLUMN     "shadow_outcome" JSONB;
