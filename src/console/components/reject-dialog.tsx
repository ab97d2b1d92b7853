import { useState } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { FormDialog } from './dialog';
import { ProblemMessage } from './problem-message';

/** Rejects an approval, asking for the feedback the agent receives with the verdict. */
export function RejectDialog({
  approval,
  onDecided,
  onClose,
}: {
  approval: ApprovalView;
  onDecided(decided: ApprovalView): void;
  onClose(): void;
}) {
  const [feedback, setFeedback] = useState('');
  const reject = useAction(async () => {
    const decided = await api.approvals.decide(approval.id, {
      verdict: 'rejected',
      revision: approval.revision,
      ...(feedback.trim() ? { feedback: feedback.trim() } : {}),
    });
    onDecided(decided);
  });
  return (
    <FormDialog
      title={`Reject ${approval.action}`}
      submitLabel="Reject"
      danger
      pending={reject.pending}
      error={<ProblemMessage error={reject.error} />}
      onSubmit={() => void reject.run()}
      onClose={onClose}
    >
      <label>
        Feedback for the agent
        <textarea autoFocus rows={4} value={feedback} onChange={(event) => setFeedback(event.target.value)} />
      </label>
    </FormDialog>
  );
}
