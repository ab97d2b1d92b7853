import { useState } from 'react';
import { api } from '../api';
import { useDraftRequest, type DraftPanelProps } from '../hooks/use-draft-request';
import { parsePayload } from '../lib/json-edit';
import { ProblemMessage } from './problem-message';

/**
 * Tries the draft against a sample request before saving: the server evaluates it exactly as it
 * would a new request (`POST /v1/policies/:key/evaluate`), and nothing is created. Errors in the
 * draft itself go back to the editor, to be shown on the rule they name.
 */
export function PolicyTryPanel({ policyKey, document, onDraftRefused }: DraftPanelProps) {
  const [action, setAction] = useState('refund');
  const [agent, setAgent] = useState('');
  const [payload, setPayload] = useState('{\n  "amount": 50\n}');
  const [context, setContext] = useState('');
  const parsedPayload = parsePayload(payload);
  const parsedContext = context.trim() ? parsePayload(context) : null;
  const valid = parsedPayload.ok && (parsedContext === null || parsedContext.ok);

  const {
    result,
    draftRefused,
    action: evaluate,
  } = useDraftRequest(onDraftRefused, () =>
    !parsedPayload.ok || (parsedContext && !parsedContext.ok)
      ? null
      : api.policies.evaluate(policyKey, {
          action,
          payload: parsedPayload.value,
          ...(agent.trim() ? { agent: agent.trim() } : {}),
          ...(parsedContext ? { context: parsedContext.value } : {}),
          policy: document(),
        }),
  );
  return (
    <form className="panel stack" onSubmit={evaluate.submit} aria-labelledby="try-title">
      <h2 id="try-title">Try against a sample request</h2>
      <p className="hint">The draft above, as it is now, evaluated by the server; nothing is saved or created.</p>
      <label>
        Sample action
        <input required value={action} onChange={(event) => setAction(event.target.value)} />
      </label>
      <label>
        Sample agent (optional)
        <input value={agent} onChange={(event) => setAgent(event.target.value)} />
      </label>
      <label>
        Sample payload (JSON)
        <textarea
          className="mono"
          rows={4}
          spellCheck={false}
          value={payload}
          aria-invalid={!parsedPayload.ok}
          onChange={(event) => setPayload(event.target.value)}
        />
      </label>
      {!parsedPayload.ok && <p className="field-error">{parsedPayload.message}</p>}
      <label>
        Sample context (JSON, optional)
        <textarea
          className="mono"
          rows={2}
          spellCheck={false}
          value={context}
          aria-invalid={parsedContext !== null && !parsedContext.ok}
          onChange={(event) => setContext(event.target.value)}
        />
      </label>
      {parsedContext && !parsedContext.ok && <p className="field-error">{parsedContext.message}</p>}
      <ProblemMessage error={evaluate.error} />
      {draftRefused && (
        <p role="alert" className="problem">
          The server cannot evaluate the draft as it is; the fields it named are marked above.
        </p>
      )}
      {result && (
        <p role="status" className={result.outcome === 'allow' ? 'notice' : 'hint'}>
          Outcome: <strong>{result.outcome}</strong>.{' '}
          {result.error
            ? `Rule ${result.matchedRule} failed to evaluate (${result.error}); the request would fail closed to review.`
            : result.matchedRule === null
              ? 'No rule matched: the default outcome applies.'
              : `Rule ${result.matchedRule} matched.`}
        </p>
      )}
      <button type="submit" disabled={!valid || evaluate.pending}>
        Try the draft
      </button>
    </form>
  );
}
