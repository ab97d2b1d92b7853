import { useState } from 'react';
import type { TeamsIntegrationInput, TeamsIntegrationView } from '../../client/api-types';
import { api, unlessMissing } from '../api';
import { ConfirmDialog } from '../components/dialog';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';

/** Where an admin connects the organization's chat integrations (docs/members-and-channels.md#microsoft-teams). */
export function IntegrationsPage() {
  const { can } = useMember();
  if (!can('integrations:write')) {
    return (
      <section aria-labelledby="integrations-title">
        <h1 id="integrations-title">Integrations</h1>
        <p role="alert" className="problem">
          Only an admin connects integrations. Ask an admin of your organization.
        </p>
      </section>
    );
  }
  return (
    <section aria-labelledby="integrations-title">
      <h1 id="integrations-title">Integrations</h1>
      <TeamsIntegration />
    </section>
  );
}

function TeamsIntegration() {
  const connection = useResource(() => unlessMissing(api.integrations.teams.get()), []);
  const [replacing, setReplacing] = useState(false);
  const [disconnecting, setDisconnecting] = useState(false);
  const disconnect = useAction(async () => {
    await api.integrations.teams.disconnect();
    setDisconnecting(false);
    connection.update(() => null);
  });
  const connected = connection.data ?? null;
  return (
    <section className="panel stack" aria-labelledby="teams-title">
      <h2 id="teams-title">Microsoft Teams</h2>
      <ProblemMessage error={connection.error} />
      {connection.data === undefined && !connection.error && <p role="status">Loading…</p>}
      {connected && (
        <>
          <TeamsFacts connection={connected} />
          <div className="actions">
            <button type="button" onClick={() => setReplacing(!replacing)}>
              {replacing ? 'Keep these credentials' : 'Replace credentials…'}
            </button>
            <button type="button" className="danger" onClick={() => setDisconnecting(true)}>
              Disconnect…
            </button>
          </div>
        </>
      )}
      {connection.data === null && (
        <p>
          Not connected. Connect your bot to post pending requests to a Teams channel as cards that members decide from (see the reviewer
          channels guide).
        </p>
      )}
      {(connection.data === null || replacing) && (
        <TeamsForm
          current={connected}
          onConnected={(view) => {
            setReplacing(false);
            connection.update(() => view);
          }}
        />
      )}
      {disconnecting && (
        <ConfirmDialog
          title="Disconnect Teams?"
          message="Nothing more is posted to the channel, and the cards already posted stop deciding."
          confirmLabel="Disconnect Teams"
          pending={disconnect.pending}
          error={<ProblemMessage error={disconnect.error} />}
          onConfirm={() => void disconnect.run()}
          onClose={() => setDisconnecting(false)}
        />
      )}
    </section>
  );
}

function TeamsFacts({ connection }: { connection: TeamsIntegrationView }) {
  return (
    <dl className="facts">
      <dt>App ID</dt>
      <dd className="mono break">{connection.appId}</dd>
      <dt>Tenant</dt>
      <dd className="mono break">{connection.tenantId}</dd>
      <dt>Team</dt>
      <dd className="mono break">{connection.teamId}</dd>
      <dt>Channel</dt>
      <dd className="mono break">{connection.channelId}</dd>
      <dt>Connected</dt>
      <dd>{formatTime(connection.connectedAt)}</dd>
    </dl>
  );
}

const FIELDS: { name: keyof TeamsIntegrationInput; label: string; hint: string; secret?: boolean }[] = [
  { name: 'appId', label: 'Microsoft App ID', hint: "The bot's Entra application (client) id, a GUID." },
  { name: 'appSecret', label: 'Client secret', hint: 'Sealed at rest and never shown again.', secret: true },
  { name: 'tenantId', label: 'Tenant ID', hint: 'Your Entra tenant; activities from other tenants are refused.' },
  { name: 'teamId', label: 'Team ID', hint: "The team's General channel id, 19:…@thread.tacv2." },
  { name: 'channelId', label: 'Channel ID', hint: 'Where pending requests are posted, 19:…@thread.tacv2.' },
];

/** The bot's credentials and where to post; the service checks them with Entra before it keeps them. */
function TeamsForm({ current, onConnected }: { current: TeamsIntegrationView | null; onConnected(view: TeamsIntegrationView): void }) {
  const [input, setInput] = useState<TeamsIntegrationInput>({
    appId: current?.appId ?? '',
    appSecret: '',
    tenantId: current?.tenantId ?? '',
    teamId: current?.teamId ?? '',
    channelId: current?.channelId ?? '',
  });
  const connect = useAction(async () => onConnected(await api.integrations.teams.connect(input)));
  return (
    <form className="stack" onSubmit={connect.submit} aria-label="Connect Microsoft Teams">
      {FIELDS.map((field) => (
        <div key={field.name}>
          <label>
            {field.label}
            <input
              name={field.name}
              type={field.secret ? 'password' : 'text'}
              autoComplete={field.secret ? 'new-password' : 'off'}
              required
              className="mono"
              aria-describedby={`teams-${field.name}-hint`}
              value={input[field.name]}
              onChange={(event) => setInput({ ...input, [field.name]: event.target.value })}
            />
          </label>
          <span id={`teams-${field.name}-hint`} className="hint">
            {field.hint}
          </span>
        </div>
      ))}
      <ProblemMessage error={connect.error} />
      <button type="submit" className="primary" disabled={connect.pending}>
        {current ? 'Replace and check' : 'Connect and check'}
      </button>
    </form>
  );
}
