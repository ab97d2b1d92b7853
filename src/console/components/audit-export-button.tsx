import { useEffect, useState } from 'react';
import type { AuditExportInput, AuditExportView } from '../../client/api-types';
import { api } from '../api';
import { useAction } from '../hooks/use-resource';
import { ProblemMessage } from './problem-message';

const POLL_INTERVAL_MS = 1000;

/** A bulk CSV export of the selection: started, followed while a worker writes it, then downloaded. */
export function AuditExportButton({ filters }: { filters: AuditExportInput }) {
  const [exported, setExported] = useState<AuditExportView | null>(null);
  const start = useAction(async () => setExported(await api.audit.createExport(filters)));
  const poll = useAction(async (id: string) => setExported(await api.audit.getExport(id)));
  const running = exported !== null && (exported.status === 'queued' || exported.status === 'running');

  useEffect(() => {
    if (!running || poll.error) return;
    const timer = window.setTimeout(() => void poll.run(exported.id), POLL_INTERVAL_MS);
    return () => window.clearTimeout(timer);
  });

  return (
    <div className="stack">
      <div className="actions">
        <button type="button" disabled={start.pending || running} onClick={() => void start.run()}>
          Export selection as CSV
        </button>
        {exported?.status === 'completed' && exported.downloadPath && (
          <a className="button" href={api.url(exported.downloadPath)} download>
            Download CSV ({exported.rowCount} events)
          </a>
        )}
      </div>
      {running && <p role="status">Exporting… {exported.rowCount} events written.</p>}
      {exported?.status === 'failed' && (
        <p role="alert" className="problem">
          The export failed; start it again.
        </p>
      )}
      <ProblemMessage error={start.error ?? poll.error} />
    </div>
  );
}
