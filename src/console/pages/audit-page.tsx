import type { AuditEventType, AuditVerification } from '../../client/api-types';
import { api } from '../api';
import { AuditEventTable } from '../components/audit-event-table';
import { AuditExportButton } from '../components/audit-export-button';
import { FilterField, FilterForm, useAppliedFilters } from '../components/filter-form';
import { ListEnd } from '../components/list-end';
import { ProblemMessage } from '../components/problem-message';
import { usePages } from '../hooks/use-pages';
import { useAction } from '../hooks/use-resource';
import { useState } from 'react';
import { AUDIT_EVENT_TYPES } from '../lib/vocabulary';

const FILTERS = ['type', 'action', 'agent', 'from', 'to'] as const;
const PAGE_SIZE = 100;

/** The organization's audit chain in seq order, with filters, verification and bulk export (see docs/audit.md). */
export function AuditPage() {
  const filters = useAppliedFilters(FILTERS) as { type?: AuditEventType; action?: string; agent?: string; from?: string; to?: string };
  const pages = usePages(
    async (after) => {
      const { events } = await api.audit.page({ ...filters, limit: String(PAGE_SIZE), ...(after ? { after } : {}) });
      const last = events[events.length - 1];
      return { items: events, next: events.length === PAGE_SIZE && last ? String(last.seq) : null };
    },
    [JSON.stringify(filters)],
  );
  const [verification, setVerification] = useState<AuditVerification | null>(null);
  const verify = useAction(async () => setVerification((await api.audit.page({ verify: 'true', limit: '1' })).verification ?? null));

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit chain</h1>
      <section className="panel" aria-labelledby="verify-title">
        <h2 id="verify-title">Verification</h2>
        <p className="hint">Recomputes every hash of the whole chain, seq 1 to its head, on the server.</p>
        <button type="button" disabled={verify.pending} onClick={() => void verify.run()}>
          {verify.pending ? 'Verifying…' : 'Verify the chain'}
        </button>
        <ProblemMessage error={verify.error} />
        {verification && (
          <p role="status" className={verification.intact ? 'notice' : 'problem'}>
            {verification.intact
              ? `Intact: ${verification.count} events and ${verification.checkpoints} signed checkpoints checked, head hash ${verification.headHash ?? '(empty chain)'}.`
              : `Broken at seq ${verification.brokenAtSeq}: ${verification.count} events and ${verification.checkpoints} signed checkpoints checked.`}
          </p>
        )}
      </section>
      <FilterForm label="Filter audit events" names={FILTERS}>
        {(draft, change) => (
          <>
            <label>
              Event type
              <select value={draft.type ?? ''} onChange={(event) => change('type', event.target.value)}>
                <option value="">Any</option>
                {AUDIT_EVENT_TYPES.map((type) => (
                  <option key={type}>{type}</option>
                ))}
              </select>
            </label>
            <FilterField label="Action" name="action" draft={draft} change={change} />
            <FilterField label="Agent" name="agent" draft={draft} change={change} />
            <FilterField label="From" name="from" kind="time" draft={draft} change={change} />
            <FilterField label="To" name="to" kind="time" draft={draft} change={change} />
          </>
        )}
      </FilterForm>
      <AuditExportButton filters={filters} />
      <ProblemMessage error={pages.error} />
      <AuditEventTable events={pages.items} label="Audit events" />
      <ListEnd list={pages} empty="No event matches these filters." />
    </section>
  );
}
