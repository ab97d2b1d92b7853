import { useState } from 'react';
import { Link } from 'react-router';
import type { WebhookEndpointWithSecret, WebhookEventType } from '../../client/api-types';
import { api } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { ProblemMessage } from '../components/problem-message';
import { SecretOnce } from '../components/secret-once';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';
import { WEBHOOK_EVENT_TYPES } from '../lib/vocabulary';
import { DataTable } from '../components/data-table';

export function WebhooksPage() {
  const { can } = useMember();
  const endpoints = useResource(() => api.webhooks.list(), []);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(WEBHOOK_EVENT_TYPES);
  const [created, setCreated] = useState<WebhookEndpointWithSecret | null>(null);
  const create = useAction(async () => {
    const endpoint = await api.webhooks.create({ url, events });
    setCreated(endpoint);
    setUrl('');
    endpoints.reload();
  });
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhook endpoints</h1>
      <ProblemMessage error={endpoints.error} />
      <DataTable label="Webhook endpoints" columns={['URL', 'Events', 'Enabled', 'Created']}>
        {endpoints.data?.endpoints.map((endpoint) => (
          <tr key={endpoint.id}>
            <td className="break">
              <Link to={`/webhooks/${endpoint.id}`}>{endpoint.url}</Link>
            </td>
            <td>{endpoint.events.join(', ')}</td>
            <td>{endpoint.enabled ? 'yes' : 'no (disabled)'}</td>
            <td>{formatTime(endpoint.createdAt)}</td>
          </tr>
        ))}
      </DataTable>
      {endpoints.data?.endpoints.length === 0 && <p className="empty">No endpoints yet.</p>}
      {created && <SecretOnce label={`Signing secret of ${created.url}`} secret={created.secret} onDone={() => setCreated(null)} />}
      {can('webhooks:write') && (
        <form className="panel stack" onSubmit={create.submit} aria-labelledby="new-endpoint-title">
          <h2 id="new-endpoint-title">New endpoint</h2>
          <label>
            URL
            <input
              type="url"
              required
              value={url}
              onChange={(event) => setUrl(event.target.value)}
              placeholder="https://example.com/hooks/approvals"
            />
          </label>
          <CheckboxGroup legend="Events" options={WEBHOOK_EVENT_TYPES} value={events} onChange={setEvents} />
          <ProblemMessage error={create.error} />
          <button type="submit" className="primary" disabled={create.pending}>
            Add endpoint
          </button>
        </form>
      )}
    </section>
  );
}
