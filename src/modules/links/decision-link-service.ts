import { randomBytes, timingSafeEqual } from 'node:crypto';
import { formatCount } from '../../lib/display-count.js';
import { ConflictError, DecisionRefusedError } from '../../lib/errors.js';
import { digestToken, newSecretToken } from '../../lib/secret-tokens.js';
import { MAX_CHANGES_FEEDBACK, type ApprovalView } from '../approvals/approval-schemas.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import { DecisionLinkStore, type DecisionLinkRecord, type LinkVerdict } from './decision-link-store.js';
import type { Sql } from '../../data/database.js';

/** What a link's page shows: the request to confirm, its outcome, or why the link no longer works. */
export type LinkState =
  | { kind: 'gone'; reason: 'unknown' | 'expired' | 'used' | 'revised' }
  | { kind: 'settled'; approval: ApprovalView }
  | { kind: 'open'; approval: ApprovalView; verdict: LinkVerdict; memberEmail: string; nonce: string };

/** What confirming a link did. */
export type LinkOutcome =
  | Exclude<LinkState, { kind: 'open' }>
  | { kind: 'decided'; approval: ApprovalView; verdict: LinkVerdict }
  | { kind: 'bad_nonce'; state: Extract<LinkState, { kind: 'open' }> }
  | { kind: 'feedback_required'; state: Extract<LinkState, { kind: 'open' }>; problem: string }
  | { kind: 'refused'; refusal: DecisionRefusedError; approval: ApprovalView }
  | { kind: 'already_voted'; approval: ApprovalView };

export interface DecisionLinks {
  approve: string;
  reject: string;
  requestChanges: string;
}

/** A token of `newSecretToken`: 32 bytes in base64url. Anything else is no link of ours. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Settled by a reviewer: approved, rejected, or waiting for the changes one asked for. */
function isSettledByDecision(approval: ApprovalView): boolean {
  return approval.status === 'approved' || approval.status === 'rejected' || approval.status === 'changes_requested';
}

/**
 * Decision links (see docs/members-and-channels.md): `PUBLIC_URL/d/<token>`, one approval, one member, one verdict,
 * valid until the approval's deadline and used once. Opening one changes nothing; confirming it
 * casts the member's vote through the one decide path (channel `email`).
 */
export class DecisionLinkService {
  private readonly store: DecisionLinkStore;

  constructor(
    sql: Sql,
    private readonly approvals: ApprovalService,
    private readonly options: { publicUrl: string },
  ) {
    this.store = new DecisionLinkStore(sql);
  }

  /** New approve, reject and request-changes links for a member (a mail sent again replaces the unused ones it sent before). */
  async issue(orgId: string, approval: Pick<ApprovalView, 'id' | 'expiresAt' | 'revision'>, memberId: string): Promise<DecisionLinks> {
    const issueOne = async (verdict: LinkVerdict) => {
      const token = newSecretToken();
      await this.store.save({
        tokenHash: digestToken(token),
        orgId,
        approvalId: approval.id,
        memberId,
        verdict,
        revision: approval.revision,
        nonce: randomBytes(16).toString('base64url'),
        expiresAt: new Date(approval.expiresAt!),
      });
      return `${this.options.publicUrl}/d/${token}`;
    };
    const [approve, reject, requestChanges] = await Promise.all([
      issueOne('approved'),
      issueOne('rejected'),
      issueOne('changes_requested'),
    ]);
    return { approve, reject, requestChanges };
  }

  /** What the link shows now; reads only. */
  async inspect(token: string): Promise<LinkState> {
    return (await this.read(token)).state;
  }

  /** Confirms a link with the nonce of its page: the member's vote, at most once. */
  async confirm(token: string, nonce: string, typed: string | undefined): Promise<LinkOutcome> {
    // Feedback as every surface sends it: trimmed, and none when only spaces were typed.
    const feedback = typed?.trim() || undefined;
    const { state, link } = await this.read(token);
    if (state.kind !== 'open' || !link) return state.kind === 'open' ? { kind: 'gone', reason: 'unknown' } : state;
    if (!sameNonce(nonce, link.nonce)) return { kind: 'bad_nonce', state };
    // Checked before the link is used: a request for changes without usable feedback leaves the link as it was.
    if (link.verdict === 'changes_requested') {
      const problem = changesFeedbackProblem(feedback);
      if (problem) return { kind: 'feedback_required', state, problem };
    }

    const usedAt = await this.store.use(digestToken(token), link);
    if (!usedAt) {
      const now = await this.inspect(token);
      return now.kind === 'open' ? { kind: 'gone', reason: 'used' } : now;
    }
    try {
      const approval = await this.approvals.decide(
        link.orgId,
        link.approvalId,
        { verdict: link.verdict, revision: link.revision, ...(feedback ? { feedback } : {}) },
        { actor: { type: 'user', id: link.memberId, email: link.memberEmail }, role: link.memberRole, channel: 'email' },
      );
      return { kind: 'decided', approval, verdict: link.verdict };
    } catch (error) {
      if (error instanceof ConflictError) {
        const approval = await this.approvals.find(link.orgId, link.approvalId);
        if (approval && isSettledByDecision(approval)) return { kind: 'settled', approval };
        if (approval?.status === 'pending') return { kind: 'already_voted', approval };
        return { kind: 'gone', reason: 'expired' };
      }
      // No vote was recorded: the links work again (a refusal may be lifted by a policy change).
      await this.store.restore(link, usedAt);
      if (error instanceof DecisionRefusedError) return { kind: 'refused', refusal: error, approval: state.approval };
      throw error;
    }
  }

  /** Maintenance: forgets links a day past their deadline. */
  prune(): Promise<number> {
    return this.store.prune(24 * 3600 * 1000);
  }

  private async read(token: string): Promise<{ state: LinkState; link?: DecisionLinkRecord }> {
    const link = TOKEN_SHAPE.test(token) ? await this.store.find(digestToken(token)) : null;
    const approval = link && (await this.approvals.find(link.orgId, link.approvalId));
    if (!link || !approval) return { state: { kind: 'gone', reason: 'unknown' } };
    if (isSettledByDecision(approval)) return { state: { kind: 'settled', approval }, link };
    // A link of an earlier revision was for a payload that is no longer the one asked about.
    if (link.revision !== approval.revision) return { state: { kind: 'gone', reason: 'revised' }, link };
    if (approval.status !== 'pending' || link.expiresAt.getTime() <= Date.now())
      return { state: { kind: 'gone', reason: 'expired' }, link };
    if (link.usedAt) return { state: { kind: 'gone', reason: 'used' }, link };
    return { state: { kind: 'open', approval, verdict: link.verdict, memberEmail: link.memberEmail, nonce: link.nonce }, link };
  }
}

function changesFeedbackProblem(feedback: string | undefined): string | null {
  if (!feedback) return 'Say what should change: the feedback is what the agent revises the request by.';
  if (feedback.length > MAX_CHANGES_FEEDBACK)
    return `The feedback is limited to ${formatCount(MAX_CHANGES_FEEDBACK)} characters; it has ${formatCount(feedback.length)}.`;
  return null;
}

function sameNonce(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
