import { useState } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { usePayloadDraft } from '../hooks/use-payload-draft';
import { JsonPayloadField } from './json-payload-field';
import { PayloadDiff } from './payload-diff';
import { ProblemMessage } from './problem-message';

/**
 * Approve with an edited payload: edited as JSON, refused while it is not a JSON object, and sent
 * only after the reviewer has seen the change as a diff.
 */
export function PayloadEditor({
  approval,
  onDecided,
  onCancel,
}: {
  approval: ApprovalView;
  onDecided(decided: ApprovalView): void;
  onCancel(): void;
}) {
  const { text, setText, parsed, changed } = usePayloadDraft(approval.payload);
  const [reviewing, setReviewing] = useState(false);
  const approve = useAction(async (payload: Record<string, unknown>) =>
    onDecided(await api.approvals.decide(approval.id, { verdict: 'approved', editedPayload: payload, revision: approval.revision })),
  );

  if (reviewing && parsed.ok) {
    return (
      <div className="stack">
        <PayloadDiff
          title="Your change to the payload"
          before={approval.payload}
          after={parsed.value}
          beforeLabel="Now"
          afterLabel="Edited"
        />
        <ProblemMessage error={approve.error} />
        <div className="actions">
          <button type="button" className="primary" disabled={approve.pending} onClick={() => void approve.run(parsed.value)}>
            Approve with this payload
          </button>
          <button type="button" onClick={() => setReviewing(false)}>
            Back to editing
          </button>
        </div>
      </div>
    );
  }
  return (
    <div className="stack">
      <JsonPayloadField
        label="Edited payload (JSON)"
        text={text}
        parsed={parsed}
        changed={changed}
        changedHint="Valid JSON. Review the change before approving."
        onChange={setText}
      />
      <div className="actions">
        <button type="button" className="primary" disabled={!parsed.ok || !changed} onClick={() => setReviewing(true)}>
          Review changes
        </button>
        <button type="button" onClick={onCancel}>
          Cancel editing
        </button>
      </div>
    </div>
  );
}
