import { useMemo, useState } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { prettyJson } from '../lib/format';
import { parsePayload, payloadDiff } from '../lib/json-edit';
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
  const [text, setText] = useState(() => prettyJson(approval.payload));
  const [reviewing, setReviewing] = useState(false);
  const parsed = useMemo(() => parsePayload(text), [text]);
  const diff = useMemo(() => (parsed.ok ? payloadDiff(approval.payload, parsed.value) : []), [approval.payload, parsed]);
  const changed = diff.some((line) => line.kind !== 'same');
  const approve = useAction(async (payload: Record<string, unknown>) =>
    onDecided(await api.approvals.decide(approval.id, { verdict: 'approved', editedPayload: payload })),
  );

  if (reviewing && parsed.ok) {
    return (
      <div className="stack">
        <h3 id="diff-title">Your change to the payload</h3>
        <pre className="diff" aria-labelledby="diff-title" tabIndex={0}>
          {diff.map((line, index) =>
            line.kind === 'added' ? (
              <ins key={index}>+ {line.text}</ins>
            ) : line.kind === 'removed' ? (
              <del key={index}>- {line.text}</del>
            ) : (
              <span key={index}>{`  ${line.text}`}</span>
            ),
          )}
        </pre>
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
      <label>
        Edited payload (JSON)
        <textarea
          className="mono"
          rows={Math.min(24, Math.max(6, text.split('\n').length + 1))}
          spellCheck={false}
          value={text}
          aria-invalid={!parsed.ok}
          aria-describedby="payload-status"
          onChange={(event) => setText(event.target.value)}
        />
      </label>
      <p id="payload-status" className={parsed.ok ? 'hint' : 'field-error'} role={parsed.ok ? undefined : 'alert'}>
        {parsed.ok ? (changed ? 'Valid JSON. Review the change before approving.' : 'Unchanged so far.') : parsed.message}
      </p>
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
