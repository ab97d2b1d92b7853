import { Link } from 'react-router';
import type { ApprovalStatus } from '../../client/api-types';
import { api } from '../api';
import { FilterForm, TextFilter, TimeFilter, useAppliedFilters } from '../components/filter-form';
import { ProblemMessage } from '../components/problem-message';
import { StatusBadge } from '../components/status-badge';
import { usePages } from '../hooks/use-pages';
import { describeDecider, formatTime } from '../lib/format';
import { APPROVAL_STATUSES } from '../lib/vocabulary';

const FILTERS = ['status', 'action', 'agent', 'policyKey', 'from', 'to'] as const;

/** Every approval, newest first, with the listing's filters (contract C8). */
export function HistoryPage() {
  const filters = useAppliedFilters(FILTERS);
  const pages = usePages(
    async (cursor) => {
      const page = await api.approvals.list({ ...filters, ...(cursor ? { cursor } : {}) });
      return { items: page.approvals, next: page.nextCursor };
    },
    [JSON.stringify(filters)],
  );

  return (
    <section aria-labelledby="history-title">
      <h1 id="history-title">History</h1>
      <FilterForm label="Filter approvals" names={FILTERS}>
        {(draft, change) => {
          const statuses = new Set(draft.status ? draft.status.split(',') : []);
          const toggle = (status: ApprovalStatus, on: boolean) => {
            if (on) statuses.add(status);
            else statuses.delete(status);
            change('status', [...statuses].join(','));
          };
          return (
            <>
              <fieldset>
                <legend>Status</legend>
                {APPROVAL_STATUSES.map((status) => (
                  <label key={status} className="inline">
                    <input type="checkbox" checked={statuses.has(status)} onChange={(event) => toggle(status, event.target.checked)} />
                    {status}
                  </label>
                ))}
              </fieldset>
              <TextFilter label="Action" name="action" draft={draft} change={change} />
              <TextFilter label="Agent" name="agent" draft={draft} change={change} />
              <TextFilter label="Policy key" name="policyKey" draft={draft} change={change} />
              <TimeFilter label="Created from" name="from" draft={draft} change={change} />
              <TimeFilter label="Created to" name="to" draft={draft} change={change} />
            </>
          );
        }}
      </FilterForm>
      <ProblemMessage error={pages.error} />
      <div className="table-scroll" role="region" aria-label="Approvals" tabIndex={0}>
        <table>
          <thead>
            <tr>
              <th scope="col">Action</th>
              <th scope="col">Status</th>
              <th scope="col">Agent</th>
              <th scope="col">Policy</th>
              <th scope="col">Created</th>
              <th scope="col">Decided by</th>
            </tr>
          </thead>
          <tbody>
            {pages.items.map((approval) => (
              <tr key={approval.id}>
                <td>
                  <Link to={`/approvals/${approval.id}`}>{approval.action}</Link>
                </td>
                <td>
                  <StatusBadge status={approval.status} />
                </td>
                <td>{approval.agent ?? '—'}</td>
                <td>{approval.policyKey}</td>
                <td>{formatTime(approval.createdAt)}</td>
                <td>{describeDecider(approval.decidedBy)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!pages.loading && pages.items.length === 0 && !pages.error && <p className="empty">No approval matches these filters.</p>}
      {pages.next && (
        <button type="button" onClick={pages.loadMore} disabled={pages.loading}>
          Load more
        </button>
      )}
    </section>
  );
}
