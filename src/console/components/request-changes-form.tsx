import { useId, useState } from 'react';
import type { ApprovalView } from '../../client/api-types';
import { MAX_CHANGES_FEEDBACK } from '../../modules/approvals/approval-schemas';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { usePayloadDraft } from '../hooks/use-payload-draft';
import { JsonPayloadField } from './json-payload-field';
import { PayloadDiff } from './payload-diff';
import { ProblemMessage } from './problem-message';

/**
 * Asks the requester to change the request (see docs/members-and-channels.md#request-changes-and-revisions): feedback the
 * agent revises by (required, counted against its limit), and optionally a payload the reviewer
 * would approve, shown as a diff against the current one before anything is sent.
 */
export function RequestChangesForm({
  approval,
  onDecided,
  onCancel,
}: {
  approval: ApprovalView;
  onDecided(decided: ApprovalView): void;
  onCancel(): void;
}) {
  const feedbackId = useId();
  const counterId = useId();
  const [feedback, setFeedback] = useState('');
  const [suggesting, setSuggesting] = useState(false);
  const { text, setText, parsed, changed } = usePayloadDraft(approval.payload);
  const [reviewing, setReviewing] = useState(false);
  const trimmed = feedback.trim();
  const suggestion = suggesting && parsed.ok ? parsed.value : null;
  const ready = trimmed.length > 0 && feedback.length <= MAX_CHANGES_FEEDBACK && (!suggesting || (parsed.ok && changed));
  const send = useAction(async () =>
    onDecided(
      await api.approvals.decide(approval.id, {
        verdict: 'changes_requested',
        feedback: trimmed,
        revision: approval.revision,
        ...(suggestion ? { suggestedPayload: suggestion } : {}),
      }),
    ),
  );

  if (reviewing && ready) {
    return (
      <div className="stack">
        <h3>Your request for changes</h3>
        <blockquote className="feedback" aria-label="Your feedback">
          {trimmed}
        </blockquote>
        {suggestion ? (
          <PayloadDiff
            title="Your suggested payload"
            before={approval.payload}
            after={suggestion}
            beforeLabel="Now"
            afterLabel="Suggested"
          />
        ) : (
          <p className="hint">No payload suggested: the agent revises by your feedback alone.</p>
        )}
        <ProblemMessage error={send.error} />
        <div className="actions">
          <button type="button" className="primary" disabled={send.pending} onClick={() => void send.run()}>
            Send request for changes
          </button>
          <button type="button" onClick={() => setReviewing(false)}>
            Back to editing
          </button>
        </div>
      </div>
    );
  }
  return (
    <form
      className="stack"
      aria-label="Request changes"
      onSubmit={(event) => {
        event.preventDefault();
        if (ready) setReviewing(true);
      }}
    >
      <label htmlFor={feedbackId}>What should the agent change? (required)</label>
      <textarea
        id={feedbackId}
        autoFocus
        rows={4}
        required
        maxLength={MAX_CHANGES_FEEDBACK}
        aria-describedby={counterId}
        value={feedback}
        onChange={(event) => setFeedback(event.target.value)}
      />
      <p id={counterId} className="hint" aria-live="polite">
        {feedback.length.toLocaleString('en')} of {MAX_CHANGES_FEEDBACK.toLocaleString('en')} characters
      </p>
      <label className="checkbox">
        <input type="checkbox" checked={suggesting} onChange={(event) => setSuggesting(event.target.checked)} />
        Suggest a payload I would approve
      </label>
      {suggesting && (
        <JsonPayloadField
          label="Suggested payload (JSON)"
          text={text}
          parsed={parsed}
          changed={changed}
          changedHint="Valid JSON. You see the change before it is sent."
          onChange={setText}
        />
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={!ready}>
          Review request
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
