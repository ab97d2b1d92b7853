import { useState } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { PayloadEditor } from './payload-editor';
import { ProblemMessage } from './problem-message';
import { RejectDialog } from './reject-dialog';
import { RequestChangesForm } from './request-changes-form';
import { StandingApprovalFields, type StandingChoice } from './standing-approval-fields';

/**
 * Approve, reject with feedback, approve an edited payload, or ask the requester for changes.
 * Shown only to members who may decide; every vote names the revision the member read.
 */
export type DecisionMode = 'choose' | 'rejecting' | 'editing' | 'changes';

export function DecisionPanel({
  approval,
  initialMode = 'choose',
  standingMaxSeconds = null,
  onDecided,
}: {
  approval: ApprovalView;
  /** The longest standing approval the request's policy allows; null when it allows none. */
  standingMaxSeconds?: number | null;
  /** The form to open with: the inbox's request-changes action opens the request-changes form. */
  initialMode?: DecisionMode;
  onDecided(decided: ApprovalView): void;
}) {
  const [mode, setMode] = useState<DecisionMode>(initialMode);
  const [standing, setStanding] = useState<StandingChoice>(null);
  const approve = useAction(async () =>
    onDecided(
      await api.approvals.decide(approval.id, { verdict: 'approved', revision: approval.revision, ...(standing ? { standing } : {}) }),
    ),
  );
  // A standing approval stands in for one reviewer only: the API refuses it under a quorum above 1.
  const standingAllowed = standingMaxSeconds !== null && approval.quorum === 1;

  return (
    <section className="panel" aria-labelledby="decide-title">
      <h2 id="decide-title">Decide{approval.stage && ` · stage ${approval.stage.index} (${approval.stage.name})`}</h2>
      {mode === 'editing' ? (
        <PayloadEditor approval={approval} onDecided={onDecided} onCancel={() => setMode('choose')} />
      ) : mode === 'changes' ? (
        <RequestChangesForm approval={approval} onDecided={onDecided} onCancel={() => setMode('choose')} />
      ) : (
        <>
          {standingAllowed && (
            <StandingApprovalFields approval={approval} maxSeconds={standingMaxSeconds} value={standing} onChange={setStanding} />
          )}
          <ProblemMessage error={approve.error} />
          <div className="actions">
            <button type="button" className="primary" disabled={approve.pending} onClick={() => void approve.run()}>
              Approve
            </button>
            <button type="button" className="danger" onClick={() => setMode('rejecting')}>
              Reject…
            </button>
            <button type="button" onClick={() => setMode('changes')}>
              Request changes…
            </button>
            {/* An edited payload needs one approver to settle it: the API refuses edits under a quorum above 1, or stages. */}
            {approval.quorum === 1 && approval.stage === null && (
              <button type="button" onClick={() => setMode('editing')}>
                Edit payload and approve…
              </button>
            )}
          </div>
        </>
      )}
      {mode === 'rejecting' && <RejectDialog approval={approval} onDecided={onDecided} onClose={() => setMode('choose')} />}
    </section>
  );
}
