-- AlterEnum: a value added to an enum cannot be used in the transaction that adds it, so the
-- columns and the index that name it come in the next migration.
ALTER TYPE "ApprovalStatus" ADD VALUE 'changes_requested';
