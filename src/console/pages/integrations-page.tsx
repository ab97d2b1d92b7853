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
      <dt>Signs in with</dt>
      <dd>
        {connection.credential.type === 'secret' ? (
          'a client secret'
        ) : (
          <>
            a certificate, thumbprint <span className="mono break">{connection.credential.thumbprintSha256}</span>, valid until{' '}
            {formatTime(connection.credential.expiresAt)}
          </>
        )}
      </dd>
      <dt>Connected</dt>
      <dd>{formatTime(connection.connectedAt)}</dd>
    </dl>
  );
}

type TextField = 'appId' | 'appSecret' | 'tenantId' | 'teamId' | 'channelId';

const FIELDS: { name: TextField; label: string; hint: string; secret?: boolean }[] = [
  { name: 'appId', label: 'Microsoft App ID', hint: "The bot's Entra application (client) id, a GUID." },
  { name: 'appSecret', label: 'Client secret', hint: 'Sealed at rest and never shown again.', secret: true },
  { name: 'tenantId', label: 'Tenant ID', hint: 'Your Entra tenant; activities from other tenants are refused.' },
  { name: 'teamId', label: 'Team ID', hint: "The team's General channel id, 19:…@thread.tacv2." },
  { name: 'channelId', label: 'Channel ID', hint: 'Where pending requests are posted, 19:…@thread.tacv2.' },
];

/** The bot's credentials and where to post; the service checks them with Entra before it keeps them. */
function TeamsForm({ current, onConnected }: { current: TeamsIntegrationView | null; onConnected(view: TeamsIntegrationView): void }) {
  const [input, setInput] = useState<Record<TextField, string>>({
    appId: current?.appId ?? '',
    appSecret: '',
    tenantId: current?.tenantId ?? '',
    teamId: current?.teamId ?? '',
    channelId: current?.channelId ?? '',
  });
  const [credential, setCredential] = useState<'secret' | 'certificate'>(current?.credential.type ?? 'secret');
  const [certificate, setCertificate] = useState({ certificate: '', privateKey: '' });
  const connect = useAction(async () => {
    const { appSecret, ...where } = input;
    const body: TeamsIntegrationInput = credential === 'secret' ? { ...where, appSecret } : { ...where, certificate };
    onConnected(await api.integrations.teams.connect(body));
  });
  const shown = FIELDS.filter((field) => credential === 'secret' || field.name !== 'appSecret');
  return (
    <form className="stack" onSubmit={connect.submit} aria-label="Connect Microsoft Teams">
      <fieldset className="inline">
        <legend>The bot signs in to Entra with</legend>
        {(['secret', 'certificate'] as const).map((type) => (
          <label key={type} className="inline">
            <input type="radio" name="credential" checked={credential === type} onChange={() => setCredential(type)} />
            {type === 'secret' ? 'a client secret' : 'a certificate'}
          </label>
        ))}
      </fieldset>
      {shown.map((field) => (
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
      {credential === 'certificate' && (
        <>
          <label>
            Certificate (PEM)
            <textarea
              className="mono"
              rows={4}
              required
              value={certificate.certificate}
              onChange={(event) => setCertificate({ ...certificate, certificate: event.target.value })}
            />
          </label>
          <label>
            Private key (PEM, unencrypted; sealed at rest and never shown again)
            <textarea
              className="mono"
              rows={4}
              required
              value={certificate.privateKey}
              onChange={(event) => setCertificate({ ...certificate, privateKey: event.target.value })}
            />
          </label>
        </>
      )}
      <ProblemMessage error={connect.error} />
      <button type="submit" className="primary" disabled={connect.pending}>
        {current ? 'Replace and check' : 'Connect and check'}
      </button>
    </form>
  );
}
