import type { ApprovalView } from '../../client/api-types';
import { describeDecider, formatTime } from '../lib/format';
import { DataTable } from './data-table';
import { PayloadDiff } from './payload-diff';

type Revision = ApprovalView['revisions'][number];

/** A request waiting for changes: who asked, the feedback, and the payload they suggested as a diff. */
export function ChangesRequestedPanel({ approval }: { approval: ApprovalView }) {
  return (
    <section className="panel changes" aria-labelledby="changes-title">
      <h2 id="changes-title">Changes requested</h2>
      <p>
        {describeDecider(approval.decidedBy)} asked for changes to revision {approval.revision}
        {approval.decidedAt && ` at ${formatTime(approval.decidedAt)}`}. The agent may send a revision until{' '}
        {approval.expiresAt ? formatTime(approval.expiresAt) : 'the request expires'}.
      </p>
      <blockquote className="feedback" aria-label="Feedback">
        {approval.feedback}
      </blockquote>
      {approval.suggestedPayload ? (
        <PayloadDiff
          title="Suggested payload"
          before={approval.payload}
          after={approval.suggestedPayload}
          beforeLabel={`Revision ${approval.revision}`}
          afterLabel="Suggested"
        />
      ) : (
        <p className="hint">No payload was suggested.</p>
      )}
    </section>
  );
}

/**
 * A revised request: what changed from the revision before, field by field, with the feedback
 * that asked for it and the agent's note. `previous` is undefined while the audit history is read,
 * null when it could not be.
 */
export function RevisionPanel({ approval, previous }: { approval: ApprovalView; previous: unknown }) {
  const entry = approval.revisions.find((revision) => revision.revision === approval.revision);
  return (
    <section className="panel" aria-labelledby="revision-title">
      <h2 id="revision-title">What changed in revision {approval.revision}</h2>
      {entry?.feedback && (
        <>
          <p>{entry.requestedBy ? describeDecider(entry.requestedBy) : 'A reviewer'} asked for it:</p>
          <blockquote className="feedback" aria-label="Feedback that asked for this revision">
            {entry.feedback}
          </blockquote>
        </>
      )}
      <p>
        <strong>The agent&rsquo;s note:</strong> {entry?.note ?? '(none)'}
      </p>
      {previous === undefined ? (
        <p role="status">Reading the earlier payload…</p>
      ) : previous === null ? (
        <p className="hint">The payload of revision {approval.revision - 1} could not be read from the audit history.</p>
      ) : (
        <PayloadDiff
          title={`Payload: revision ${approval.revision - 1} → ${approval.revision}`}
          before={previous}
          after={approval.payload}
          beforeLabel={`Revision ${approval.revision - 1}`}
          afterLabel={`Revision ${approval.revision}`}
        />
      )}
    </section>
  );
}

/** Every revision so far, the original first. */
export function RevisionList({ revisions, current }: { revisions: Revision[]; current: number }) {
  return (
    <DataTable label="Revisions of this request" columns={['Revision', 'At', 'Asked by', 'Feedback', 'Note', 'Payload hash']}>
      {revisions.map((revision) => (
        <tr key={revision.revision} aria-current={revision.revision === current ? 'true' : undefined}>
          <td>
            {revision.revision}
            {revision.revision === 1 ? ' (original)' : ''}
          </td>
          <td>{formatTime(revision.at)}</td>
          <td>{revision.requestedBy ? describeDecider(revision.requestedBy) : '—'}</td>
          <td className="break">{revision.feedback ?? '—'}</td>
          <td className="break">{revision.note ?? '—'}</td>
          <td className="mono small" title={revision.payloadHash}>
            {revision.payloadHash.slice(0, 12)}…
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
