import { Link } from 'react-router';
import type { ApprovalStatus } from '../../client/api-types';
import { api } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { FilterField, FilterForm, useAppliedFilters } from '../components/filter-form';
import { ListEnd } from '../components/list-end';
import { ProblemMessage } from '../components/problem-message';
import { StatusBadge } from '../components/status-badge';
import { useMemberEmails } from '../hooks/member-emails';
import { usePages } from '../hooks/use-pages';
import { describeDecider, formatTime } from '../lib/format';
import { APPROVAL_STATUSES } from '../lib/vocabulary';
import { DataTable } from '../components/data-table';

const FILTERS = ['status', 'action', 'agent', 'policyKey', 'from', 'to'] as const;

/** Every approval, newest first, with the listing's filters (see docs/api.md). */
export function HistoryPage() {
  const emails = useMemberEmails();
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
        {(draft, change) => (
          <>
            <CheckboxGroup
              legend="Status"
              options={APPROVAL_STATUSES}
              value={(draft.status ? draft.status.split(',') : []) as ApprovalStatus[]}
              onChange={(statuses) => change('status', statuses.join(','))}
            />
            <FilterField label="Action" name="action" draft={draft} change={change} />
            <FilterField label="Agent" name="agent" draft={draft} change={change} />
            <FilterField label="Policy key" name="policyKey" draft={draft} change={change} />
            <FilterField label="Created from" name="from" kind="time" draft={draft} change={change} />
            <FilterField label="Created to" name="to" kind="time" draft={draft} change={change} />
          </>
        )}
      </FilterForm>
      <ProblemMessage error={pages.error} />
      <DataTable label="Approvals" columns={['Action', 'Status', 'Agent', 'Policy', 'Created', 'Decided by']}>
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
            <td>{describeDecider(approval.decidedBy, emails)}</td>
          </tr>
        ))}
      </DataTable>
      <ListEnd list={pages} empty="No approval matches these filters." />
    </section>
  );
}
