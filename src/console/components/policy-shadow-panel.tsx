import { useState } from 'react';
import { Link } from 'react-router';
import type { PolicyDocumentInput, PolicyView } from '../../client/api-types';
import { api } from '../api';
import { useAction, useResource } from '../hooks/use-resource';
import { countOf, formatTime } from '../lib/format';
import { jsonLineDiff, sortedKeys } from '../lib/json-edit';
import { documentOfView, draftErrorsOf, shadowOf, SHADOW_PREFIX, type FieldError } from '../lib/policy-draft';
import { DataTable } from './data-table';
import { LineDiff } from './line-diff';
import { ProblemMessage } from './problem-message';

/**
 * The policy's shadow: a draft evaluated beside it at every creation, never deciding. Shows how
 * often the two agreed since the shadow was set and where they did not, and sets the editor's
 * draft as the shadow or removes it; both store a new version of the policy, its live rules as
 * stored (not as edited above).
 */
export function PolicyShadowPanel({
  policyKey,
  stored,
  editable,
  draft,
  onStored,
  onDraftRefused,
}: {
  policyKey: string;
  stored: PolicyView;
  editable: boolean;
  /** The editor's draft, without a shadow of its own. */
  draft(): PolicyDocumentInput;
  onStored(policy: PolicyView): void;
  onDraftRefused(errors: FieldError[]): void;
}) {
  const summary = useResource(() => api.policies.shadow(policyKey), [policyKey, stored.version]);
  const [draftRefused, setDraftRefused] = useState(false);
  const store = useAction(async (shadow: PolicyDocumentInput['shadow']) => {
    setDraftRefused(false);
    onDraftRefused([]);
    try {
      onStored(await api.policies.put(policyKey, { ...documentOfView(stored), shadow }));
    } catch (error) {
      const { errors, onlyDraft } = draftErrorsOf(error, SHADOW_PREFIX);
      onDraftRefused(errors);
      setDraftRefused(onlyDraft);
      if (!onlyDraft) throw error;
    }
  });
  const shadow = stored.shadow;
  const live = documentOfView({ ...stored, shadow: null });
  return (
    <section className="panel stack" aria-labelledby="shadow-title">
      <h2 id="shadow-title">Shadow policy</h2>
      <p className="hint">
        A shadow is evaluated beside the policy for every new request and its outcome recorded, but it never decides: it shows what a change
        would do to the requests as they arrive, before it goes live.
      </p>
      {shadow ? (
        <>
          <LineDiff
            lines={jsonLineDiff(sortedKeys(live), sortedKeys({ ...shadow, shadow: null }))}
            label="How the shadow differs from the policy, line by line"
          />
          <ProblemMessage error={summary.error} />
          {summary.data && (
            <>
              <p role="status">
                Since {formatTime(summary.data.since)}: {countOf(summary.data.evaluated, 'request')} evaluated,{' '}
                {summary.data.agreed.toLocaleString()} with the same outcome.
              </p>
              {summary.data.disagreed.length === 0 ? (
                <p className="hint">No disagreement so far.</p>
              ) : (
                <>
                  <DataTable label="Disagreements" columns={['The policy said', 'The shadow said', 'Requests']}>
                    {summary.data.disagreed.map((pair) => (
                      <tr key={`${pair.live}-${pair.shadow}`}>
                        <td>{pair.live}</td>
                        <td>{pair.shadow}</td>
                        <td>{pair.count.toLocaleString()}</td>
                      </tr>
                    ))}
                  </DataTable>
                  <h3 id="disagreement-examples">Requests they disagreed on, newest first</h3>
                  <ul className="example-requests" aria-labelledby="disagreement-examples">
                    {summary.data.disagreed
                      .flatMap((pair) => pair.examples.map((example) => ({ ...pair, ...example })))
                      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
                      .map((example) => (
                        <li key={example.approvalId}>
                          <Link to={`/approvals/${example.approvalId}`} className="mono">
                            Request {example.approvalId.slice(0, 8)}
                          </Link>
                          : the policy said {example.live}, the shadow {example.shadow} ({formatTime(example.createdAt)})
                        </li>
                      ))}
                  </ul>
                  {summary.data.disagreed.some((pair) => pair.count > pair.examples.length) && (
                    <p className="hint">Only the newest requests of each disagreement are listed; the counts above are all of them.</p>
                  )}
                </>
              )}
            </>
          )}
        </>
      ) : (
        <p className="hint">No shadow is set.</p>
      )}
      <ProblemMessage error={store.error} />
      {draftRefused && (
        <p role="alert" className="problem">
          The server refused the draft as a shadow; the fields it named are marked above.
        </p>
      )}
      <div className="actions">
        <button type="button" onClick={summary.reload} disabled={!shadow || summary.loading}>
          Refresh the summary
        </button>
        {editable && (
          <>
            <button type="button" onClick={() => void store.run(shadowOf(draft()))} disabled={store.pending}>
              {shadow ? 'Replace the shadow with the draft' : 'Set the draft as the shadow'}
            </button>
            {shadow && (
              <button type="button" className="danger" onClick={() => void store.run(null)} disabled={store.pending}>
                Remove the shadow
              </button>
            )}
          </>
        )}
      </div>
    </section>
  );
}
