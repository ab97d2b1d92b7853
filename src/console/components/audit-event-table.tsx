import type { AuditEventView } from '../../client/api-types';
import { useMemberEmails } from '../hooks/member-emails';
import { describeActor, formatTime } from '../lib/format';
import { JsonBlock } from './json-block';
import { DataTable } from './data-table';

/** Audit events in seq order; each one's data can be opened. */
export function AuditEventTable({ events, label }: { events: AuditEventView[]; label: string }) {
  const emails = useMemberEmails();
  return (
    <DataTable label={label} columns={['Seq', 'Time', 'Event', 'Actor', 'Data']}>
      {events.map((event) => (
        <tr key={event.seq}>
          <td>{event.seq}</td>
          <td>{formatTime(event.createdAt)}</td>
          <td>{event.type}</td>
          <td>{describeActor(event.actor, emails)}</td>
          <td>
            <details>
              <summary>Data of event {event.seq}</summary>
              <JsonBlock label={`Data of audit event ${event.seq}`} value={event.data} />
              <p className="mono small">hash {event.hash}</p>
            </details>
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
