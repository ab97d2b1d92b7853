import { useEffect, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEventType } from '../../client/api-types';
import { api } from '../api';
import { ConfirmDialog } from '../components/dialog';
import { CheckboxGroup } from '../components/checkbox-group';
import { ProblemMessage } from '../components/problem-message';
import { SecretOnce } from '../components/secret-once';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';
import { WEBHOOK_EVENT_TYPES } from '../lib/vocabulary';
import { DataTable } from '../components/data-table';

/** One endpoint: its settings, secret rotation, and its deliveries with every attempt. */
export function WebhookPage() {
  const { id = '' } = useParams();
  const { can } = useMember();
  const editable = can('webhooks:write');
  const endpoint = useResource(() => api.webhooks.get(id), [id]);
  const deliveries = useResource(() => api.webhooks.deliveries(id), [id]);
  const [secret, setSecret] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<'rotate' | 'delete' | null>(null);
  const navigate = useNavigate();
  const rotate = useAction(async () => {
    setSecret((await api.webhooks.rotateSecret(id)).secret);
    setConfirming(null);
  });
  const remove = useAction(async () => {
    await api.webhooks.delete(id);
    navigate('/webhooks');
  });

  if (endpoint.error) return <ProblemMessage error={endpoint.error} />;
  if (!endpoint.data) return <p role="status">Loading…</p>;
  return (
    <section aria-labelledby="webhook-title">
      <h1 id="webhook-title" className="break">
        {endpoint.data.url}
      </h1>
      <EndpointSettings endpoint={endpoint.data} editable={editable} onSaved={(saved) => endpoint.update(() => saved)} />
      {secret && <SecretOnce label="New signing secret" secret={secret} onDone={() => setSecret(null)} />}
      {editable && (
        <div className="actions">
          <button type="button" onClick={() => setConfirming('rotate')}>
            Rotate secret…
          </button>
          <button type="button" className="danger" onClick={() => setConfirming('delete')}>
            Delete endpoint…
          </button>
        </div>
      )}
      <div className="page-head">
        <h2>Deliveries</h2>
        <button type="button" onClick={deliveries.reload}>
          Refresh deliveries
        </button>
      </div>
      <ProblemMessage error={deliveries.error} />
      {deliveries.data?.deliveries.length === 0 && <p className="empty">Nothing delivered yet.</p>}
      <ul className="deliveries">
        {deliveries.data?.deliveries.map((delivery) => (
          <DeliveryItem
            key={delivery.id}
            endpointId={id}
            delivery={delivery}
            editable={editable}
            onRedelivered={(redelivered) =>
              deliveries.update((data) => ({
                deliveries: data.deliveries.map((known) => (known.id === redelivered.id ? redelivered : known)),
              }))
            }
          />
        ))}
      </ul>
      {confirming === 'rotate' && (
        <ConfirmDialog
          title="Rotate the signing secret?"
          message="A new secret is made and shown once. For 24 hours deliveries carry signatures by both secrets, so receivers can switch."
          confirmLabel="Rotate secret"
          pending={rotate.pending}
          error={<ProblemMessage error={rotate.error} />}
          onConfirm={() => void rotate.run()}
          onClose={() => setConfirming(null)}
        />
      )}
      {confirming === 'delete' && (
        <ConfirmDialog
          title="Delete this endpoint?"
          message="Its deliveries are deleted with it, and nothing more is sent to it."
          confirmLabel="Delete endpoint"
          pending={remove.pending}
          error={<ProblemMessage error={remove.error} />}
          onConfirm={() => void remove.run()}
          onClose={() => setConfirming(null)}
        />
      )}
    </section>
  );
}

function EndpointSettings({
  endpoint,
  editable,
  onSaved,
}: {
  endpoint: WebhookEndpointView;
  editable: boolean;
  onSaved(endpoint: WebhookEndpointView): void;
}) {
  const [url, setUrl] = useState(endpoint.url);
  const [events, setEvents] = useState<WebhookEventType[]>(endpoint.events);
  const [enabled, setEnabled] = useState(endpoint.enabled);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    setUrl(endpoint.url);
    setEvents(endpoint.events);
    setEnabled(endpoint.enabled);
  }, [endpoint]);
  const save = useAction(async () => {
    onSaved(await api.webhooks.update(endpoint.id, { url, events, enabled }));
    setSaved(true);
  });
  return (
    <form className="panel stack" onSubmit={save.submit} aria-label="Endpoint settings" onChange={() => setSaved(false)}>
      <fieldset disabled={!editable}>
        <label>
          URL
          <input type="url" required value={url} onChange={(event) => setUrl(event.target.value)} />
        </label>
        <CheckboxGroup legend="Events" options={WEBHOOK_EVENT_TYPES} value={events} onChange={setEvents} />
        <label className="inline">
          <input type="checkbox" checked={enabled} onChange={(event) => setEnabled(event.target.checked)} />
          Enabled
        </label>
      </fieldset>
      <ProblemMessage error={save.error} />
      {saved && (
        <p role="status" className="notice">
          Saved.
        </p>
      )}
      {editable && (
        <button type="submit" className="primary" disabled={save.pending}>
          Save endpoint
        </button>
      )}
    </form>
  );
}

function DeliveryItem({
  endpointId,
  delivery,
  editable,
  onRedelivered,
}: {
  endpointId: string;
  delivery: WebhookDeliveryView;
  editable: boolean;
  onRedelivered(delivery: WebhookDeliveryView): void;
}) {
  const redeliver = useAction(async () => onRedelivered(await api.webhooks.redeliver(endpointId, delivery.id)));
  return (
    <li className="delivery">
      <div className="page-head">
        <span>
          <strong>{delivery.eventType}</strong> <span className={`badge badge-${delivery.status}`}>{delivery.status}</span>
        </span>
        {editable && (
          <button
            type="button"
            aria-label={`Redeliver ${delivery.eventType} ${delivery.id.slice(0, 8)}`}
            disabled={redeliver.pending}
            onClick={() => void redeliver.run()}
          >
            Redeliver
          </button>
        )}
      </div>
      <p className="meta">
        {formatTime(delivery.createdAt)} · {delivery.attemptCount} attempt{delivery.attemptCount === 1 ? '' : 's'}
        {delivery.nextAttemptAt && ` · next ${formatTime(delivery.nextAttemptAt)}`} · <span className="mono">{delivery.id}</span>
      </p>
      <ProblemMessage error={redeliver.error} />
      {delivery.attempts.length > 0 && (
        <details>
          <summary>Attempts of delivery {delivery.id.slice(0, 8)}</summary>
          <DataTable
            label={`Attempts of delivery ${delivery.id.slice(0, 8)}`}
            columns={['Time', 'Status', 'Duration', 'Error', 'Response']}
          >
            {delivery.attempts.map((attempt, index) => (
              <tr key={index}>
                <td>{formatTime(attempt.attemptedAt)}</td>
                <td>{attempt.statusCode ?? 'no response'}</td>
                <td>{attempt.durationMs} ms</td>
                <td>{attempt.error ?? '—'}</td>
                <td className="mono small break">{attempt.responseBody ?? '—'}</td>
              </tr>
            ))}
          </DataTable>
        </details>
      )}
    </li>
  );
}
