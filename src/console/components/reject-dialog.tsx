import { useState, type FormEvent } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { Dialog } from './dialog';
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
      ...(feedback.trim() ? { feedback: feedback.trim() } : {}),
    });
    onDecided(decided);
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void reject.run();
  };
  return (
    <Dialog title={`Reject ${approval.action}`} onClose={onClose}>
      <form onSubmit={submit} className="stack">
        <label>
          Feedback for the agent
          <textarea autoFocus rows={4} value={feedback} onChange={(event) => setFeedback(event.target.value)} />
        </label>
        <ProblemMessage error={reject.error} />
        <div className="actions">
          <button type="submit" className="danger" disabled={reject.pending}>
            Reject
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
