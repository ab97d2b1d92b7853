import { formatUtc } from '../../lib/display-time.js';
import type { ApprovalView } from '../approvals/approval-schemas.js';

/** Payloads are shown up to this many bytes of pretty-printed JSON in a notice (see docs/members-and-channels.md). */
export const NOTICE_PAYLOAD_BYTES = 2048;

/**
 * The payload as a notice shows it: pretty-printed JSON, cut past `limit` bytes (on a character
 * boundary) with a line saying how much there is in all.
 */
export function shownPayload(payload: unknown, limit = NOTICE_PAYLOAD_BYTES): { text: string; shortened: boolean } {
  const full = JSON.stringify(payload, null, 2);
  const size = Buffer.byteLength(full, 'utf8');
  if (size <= limit) return { text: full, shortened: false };
  const cut = Buffer.from(full, 'utf8')
    .subarray(0, limit)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return { text: `${cut}\n… (shortened: ${size} bytes in all; the console shows all of it)`, shortened: true };
}

/** Where a member reads the approval in the console. */
export function consoleUrl(publicUrl: string, approvalId: string): string {
  return `${publicUrl}/console/approvals/${approvalId}`;
}

/** Who settled an approval, for people: a member's email, an API key, the policy, or nobody (a timeout). */
export function describeDecider(approval: Pick<ApprovalView, 'decidedBy'>): string {
  const by = approval.decidedBy;
  if (!by) return 'nobody';
  if (by.type === 'user') return by.email;
  if (by.type === 'api_key') return `API key ${by.id}`;
  return `policy ${by.id}`;
}

/** The stage of reviewers an approval is in, for people: `Stage 2 (Finance)`; null when its policy names no stages. */
export function describeStage(approval: Pick<ApprovalView, 'stage'>): string | null {
  return approval.stage && `Stage ${approval.stage.index} (${approval.stage.name})`;
}

/** One line on how an approval ended, or how far its votes got: what every surface shows after the fact. */
export function describeOutcome(approval: ApprovalView): string {
  switch (approval.status) {
    case 'approved':
    case 'rejected':
      return `${approval.status === 'approved' ? 'Approved' : 'Rejected'} by ${describeDecider(approval)} at ${approval.decidedAt ? formatUtc(approval.decidedAt) : '(unknown)'}.`;
    case 'changes_requested':
      return `Changes requested by ${describeDecider(approval)} at ${approval.decidedAt ? formatUtc(approval.decidedAt) : '(unknown)'}: ${approval.feedback}`;
    case 'expired':
      return 'Expired: nobody decided it in time.';
    case 'escalated':
      return `Escalated: nobody decided it in time, so it went on as request ${approval.escalatedTo ?? '(unknown)'}.`;
    case 'pending': {
      // With stages, the quorum is the current stage's, and so are the approvals counted towards it.
      const approvals = approval.votes.filter((vote) => vote.verdict === 'approved' && vote.stage === (approval.stage?.index ?? null));
      const stage = describeStage(approval);
      const until = approval.expiresAt ? formatUtc(approval.expiresAt) : '(no deadline)';
      if (approvals.length === 0) return `${stage ? `${stage}: w` : 'W'}aiting for a decision until ${until}.`;
      const who = approvals.map((vote) => describeDecider({ decidedBy: vote.by })).join(', ');
      return `${stage ? `${stage}: ` : ''}${approvals.length} of ${approval.quorum} approvals so far (${who}); waiting until ${until}.`;
    }
  }
}

/** How a settled approval ended, with the deciding vote's feedback: what a post shows once it is over. */
export function describeSettlement(approval: ApprovalView): string {
  const decided = approval.status === 'approved' || approval.status === 'rejected';
  // describeOutcome of a request for changes quotes its feedback already.
  return decided && approval.feedback ? `${describeOutcome(approval)} Feedback: ${approval.feedback}` : describeOutcome(approval);
}

/** What a reminder in a shared channel says (docs/members-and-channels.md#reminders): who has not decided, and until when. */
export function describeReminder(approval: ApprovalView, undecided: readonly { email: string }[]): string {
  return (
    `Reminder: "${approval.action}"${approval.revision > 1 ? ` (revision ${approval.revision})` : ''} is still waiting for a decision ` +
    `until ${approval.expiresAt ? formatUtc(approval.expiresAt) : '(no deadline)'}. Not decided yet by: ${undecided.map((member) => member.email).join(', ')}.`
  );
}
