import { useState } from 'react';
import { Link } from 'react-router';
import type { PolicyReplay } from '../../client/api-types';
import { api } from '../api';
import { useDraftRequest, type DraftPanelProps } from '../hooks/use-draft-request';
import { localInputToIso } from '../lib/datetime-input';
import { countOf } from '../lib/format';
import { DataTable } from './data-table';
import { ProblemMessage } from './problem-message';

type Example = PolicyReplay['examples'][number];

function whyText(example: Example): string {
  if (example.error) return `rule ${example.matchedRule} failed (${example.error}), failing closed`;
  return example.matchedRule === null ? 'no rule matched, the default applied' : `rule ${example.matchedRule} matched`;
}

/**
 * Replays the draft against the requests already made under this key before it is saved
 * (`POST /v1/policies/:key/replay`): how many would get another outcome, and which, each linked
 * to its request. Nothing is created or changed. Errors in the draft go back to the editor.
 */
export function PolicyReplayPanel({ policyKey, document, onDraftRefused }: DraftPanelProps) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [limit, setLimit] = useState('1000');
  const {
    result,
    draftRefused,
    action: replay,
  } = useDraftRequest(onDraftRefused, () =>
    api.policies.replay(policyKey, {
      policy: document(),
      from: localInputToIso(from),
      to: localInputToIso(to),
      // What is not a number goes as typed, for the API to name the field.
      limit: limit.trim() === '' ? undefined : Number(limit),
    }),
  );
  return (
    <form className="panel stack" onSubmit={replay.submit} aria-labelledby="replay-title">
      <h2 id="replay-title">Replay against past requests</h2>
      <p className="hint">
        The draft above, evaluated again for the requests already made under {policyKey}, newest first, and compared with the outcome each
        one got; nothing is saved or changed.
      </p>
      <label>
        Requests created from (optional)
        <input type="datetime-local" value={from} onChange={(event) => setFrom(event.target.value)} />
      </label>
      <label>
        Requests created until (optional)
        <input type="datetime-local" value={to} onChange={(event) => setTo(event.target.value)} />
      </label>
      <label>
        At most this many of the newest requests
        <input inputMode="numeric" value={limit} onChange={(event) => setLimit(event.target.value)} />
      </label>
      <ProblemMessage error={replay.error} />
      {draftRefused && (
        <p role="alert" className="problem">
          The server cannot replay the draft as it is; the fields it named are marked above.
        </p>
      )}
      {result && <ReplayResult result={result} />}
      <button type="submit" disabled={replay.pending}>
        {replay.pending ? 'Replaying…' : 'Replay the draft'}
      </button>
    </form>
  );
}

function ReplayResult({ result }: { result: PolicyReplay }) {
  const changedCount = result.evaluated - result.unchanged;
  return (
    <div className="stack">
      <p role="status" className={changedCount === 0 ? 'notice' : 'hint'}>
        {result.evaluated === 0
          ? 'No request was made under this key in that range.'
          : `Of ${countOf(result.evaluated, 'request')}, ${changedCount.toLocaleString()} would get another outcome and ${result.unchanged.toLocaleString()} the same.`}
      </p>
      {result.changed.length > 0 && (
        <>
          <DataTable label="Outcomes that would change" columns={['Was', 'Would be', 'Requests']}>
            {result.changed.map((change) => (
              <tr key={`${change.from}-${change.to}`}>
                <td>{change.from}</td>
                <td>{change.to}</td>
                <td>{change.count.toLocaleString()}</td>
              </tr>
            ))}
          </DataTable>
          <h3 id="replay-examples">Examples, newest first</h3>
          <ul className="example-requests" aria-labelledby="replay-examples">
            {result.examples.map((example) => (
              <li key={example.approvalId}>
                <Link to={`/approvals/${example.approvalId}`} className="mono">
                  Request {example.approvalId.slice(0, 8)}
                </Link>
                : was {example.was}, would be {example.would} ({whyText(example)})
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
