/**
 * The shapes of problems and approvals, inferred from the zod schemas the server validates with.
 * Kept apart from the rest of `api-types.ts` because the published client (`@approval-gate/client`)
 * uses only these: its declarations then reach no further than the approval and problem schemas.
 */
import type { z } from 'zod';
import type * as approvals from '../modules/approvals/approval-schemas.js';
import type { problemSchema } from '../http/problem-schema.js';

/** What a request sends: the schema's input (defaults optional, query values as strings). */
export type In<S extends z.ZodType> = z.input<S>;
/** What a response holds: the schema's output. */
export type Out<S extends z.ZodType> = z.output<S>;

export type Problem = Out<typeof problemSchema>;

export type ApprovalView = Out<typeof approvals.approvalViewSchema>;
export type ApprovalStatus = approvals.ApprovalStatus;
export type ApprovalList = Out<typeof approvals.approvalListSchema>;
export type ApprovalListQuery = In<typeof approvals.approvalListQuerySchema>;
export type ApprovalCreateInput = In<typeof approvals.approvalCreateSchema>;
export type DecisionInput = In<typeof approvals.decisionSchema>;
export type RevisionInput = In<typeof approvals.revisionInputSchema>;
export type Revision = Out<typeof approvals.revisionSchema>;
export type Decider = Out<typeof approvals.deciderSchema>;
export type Receipt = Out<typeof approvals.receiptSchema>;
export type SignedReceipt = Out<typeof approvals.signedReceiptSchema>;
export type Vote = Out<typeof approvals.voteSchema>;
