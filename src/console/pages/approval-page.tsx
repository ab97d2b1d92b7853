import { Link, useLocation, useParams } from 'react-router';
import { ApiError } from '../../client/api-client';
import type { ApprovalView, PolicyView } from '../../client/api-types';
import { api, unlessMissing } from '../api';
import { AuditEventTable } from '../components/audit-event-table';
import { DecisionPanel, type DecisionMode } from '../components/decision-panel';
import { JsonBlock } from '../components/json-block';
import { errorText, ProblemMessage } from '../components/problem-message';
import { StatusBadge } from '../components/status-badge';
import { TimeLeft } from '../components/time-left';
import { useApprovalEvents } from '../hooks/approval-events';
import { useMember } from '../hooks/session';
import { useResource } from '../hooks/use-resource';
import { auditEventsOf, policyVerdictOf, revisionPayloadsOf, type PolicyVerdict } from '../lib/approval-audit';
import { ChangesRequestedPanel, RevisionList, RevisionPanel } from '../components/revision-panels';
import { describeDecider, formatTime, quorumText } from '../lib/format';

/** What a link to this page may ask for: the inbox's request-changes action opens its form. */
export interface DecisionState {
  decide?: DecisionMode;
}

export function ApprovalPage() {
  const { id = '' } = useParams();
  const opened = (useLocation().state as DecisionState | null)?.decide;
  const { member, can } = useMember();
  const approval = useResource(() => api.approvals.get(id), [id]);
  const history = useResource(async () => (approval.data ? auditEventsOf(approval.data) : null), [approval.data]);
  const policy = useResource(
    async () => (approval.data ? unlessMissing(api.policies.get(approval.data.policyKey)) : null),
    [approval.data?.policyKey],
  );

  useApprovalEvents({
    onEvent: (event) => {
      if (event.approvalId === id) approval.reload();
    },
    onResync: approval.reload,
  });

  if (approval.error) {
    const missing = approval.error instanceof ApiError && approval.error.status === 404;
    return (
      <section>
        <h1>Approval</h1>
        <p role="alert" className="problem">
          {missing ? 'No approval with this id exists in your organization.' : errorText(approval.error)}
        </p>
      </section>
    );
  }
  if (!approval.data) return <p role="status">Loading…</p>;
  const view = approval.data;
  // A vote through a key the member owns is theirs too: they vote once, whatever the credential.
  const voted = view.votes.some(({ by }) => (by.type === 'user' ? by.id : by.type === 'api_key' ? by.owner?.id : undefined) === member.id);
  const decidable = view.status === 'pending' && can('approvals:decide') && !voted;
  const verdict = history.data ? policyVerdictOf(history.data.events) : null;
  const previousPayload =
    view.revision > 1
      ? history.data
        ? (revisionPayloadsOf(history.data.events).get(view.revision - 1) ?? null)
        : history.error
          ? null
          : undefined
      : undefined;

  return (
    <article aria-labelledby="approval-title">
      <div className="page-head">
        <h1 id="approval-title">{view.action}</h1>
        <StatusBadge status={view.status} />
      </div>
      <dl className="facts">
        <dt>Agent</dt>
        <dd>{view.agent ?? '—'}</dd>
        <dt>Policy</dt>
        <dd>
          <Link to={`/policies/${encodeURIComponent(view.policyKey)}`}>{view.policyKey}</Link>
        </dd>
        <dt>Outcome</dt>
        <dd>{describeVerdict(verdict, view, policy.data ?? null, history.error)}</dd>
        {view.onBehalfOf && (
          <>
            <dt>On behalf of</dt>
            <dd>{view.onBehalfOf}</dd>
          </>
        )}
        {view.stage && (
          <>
            <dt>Stage</dt>
            <dd>
              {view.stage.index} ({view.stage.name}){view.status === 'pending' ? ': its reviewers decide now' : ''}
            </dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{formatTime(view.createdAt)}</dd>
        <dt>Revision</dt>
        <dd>
          {view.revision}
          {view.revision > 1 && ` (${view.revision - 1} after the original)`}
        </dd>
        <dt>Time left</dt>
        <dd>{view.status === 'pending' || view.status === 'changes_requested' ? <TimeLeft expiresAt={view.expiresAt} /> : '—'}</dd>
        <dt>Decided by</dt>
        <dd>
          {describeDecider(view.decidedBy)}
          {view.decidedAt && ` at ${formatTime(view.decidedAt)}`}
        </dd>
        {view.feedback !== null && (
          <>
            <dt>Feedback</dt>
            <dd>{view.feedback}</dd>
          </>
        )}
        <dt>Votes</dt>
        <dd>
          {[view.votes.length === 0 ? 'none yet' : `${view.votes.length}`, quorumText(view)].filter(Boolean).join('; ')}
          {view.votes.length > 0 && (
            <ul className="votes">
              {view.votes.map((vote) => (
                <li key={`${vote.by.type}:${vote.by.id}`}>
                  {vote.stage !== null && `Stage ${vote.stage}: `}
                  {describeDecider(vote.by)}: {vote.verdict} at {formatTime(vote.at)}
                  {vote.feedback && ` (“${vote.feedback}”)`}
                </li>
              ))}
            </ul>
          )}
        </dd>
        <dt>Payload hash</dt>
        <dd className="mono break">{view.payloadHash}</dd>
        {view.escalatedFrom && (
          <>
            <dt>Escalated from</dt>
            <dd>
              <Link to={`/approvals/${view.escalatedFrom}`}>{view.escalatedFrom}</Link>
            </dd>
          </>
        )}
        {view.escalatedTo && (
          <>
            <dt>Escalated to</dt>
            <dd>
              <Link to={`/approvals/${view.escalatedTo}`}>{view.escalatedTo}</Link>
            </dd>
          </>
        )}
        <dt>Id</dt>
        <dd className="mono break">{view.id}</dd>
      </dl>

      {decidable && (
        <DecisionPanel
          key={`${view.id}:${view.revision}`}
          approval={view}
          initialMode={opened}
          standingMaxSeconds={policy.data?.standingApproval?.maxSeconds ?? null}
          onDecided={(decided) => approval.update(() => decided)}
        />
      )}
      {view.status === 'changes_requested' && <ChangesRequestedPanel approval={view} />}
      {view.revision > 1 && <RevisionPanel approval={view} previous={previousPayload} />}

      <h2>Payload</h2>
      <JsonBlock label="Payload" value={view.payload} />
      <h2>Context</h2>
      {view.context ? <JsonBlock label="Context" value={view.context} /> : <p>No context was given.</p>}

      <h2>Revisions</h2>
      <RevisionList revisions={view.revisions} current={view.revision} />

      <h2>Audit events</h2>
      <ProblemMessage error={history.error} />
      {history.data && (
        <>
          <AuditEventTable events={history.data.events} label="Audit events of this approval" />
          {!history.data.complete && <p className="hint">Only the first events are shown; see the Audit page for the rest.</p>}
        </>
      )}
    </article>
  );
}

/** Which rule gave the outcome, from the approval.created audit event, with the rule's text when it is still the one that applied. */
function describeVerdict(verdict: PolicyVerdict | null, approval: ApprovalView, policy: PolicyView | null, auditError: unknown): string {
  if (!verdict) return auditError ? 'Unknown: the audit history could not be read.' : '…';
  if (verdict.outcome === null) return `Orphan: no policy '${approval.policyKey}' existed when the request arrived.`;
  if (verdict.matchedRule === null) return `No rule matched: the default outcome, ${verdict.outcome}, applied.`;
  const rule = policy && policy.updatedAt <= approval.createdAt ? policy.rules[verdict.matchedRule] : undefined;
  const text = rule ? ` (${rule.when})` : '';
  if (verdict.evaluationError)
    return `Rule ${verdict.matchedRule}${text} failed to evaluate (${verdict.evaluationError}); the request failed closed to review.`;
  return `Rule ${verdict.matchedRule}${text} matched: ${verdict.outcome}.`;
}
