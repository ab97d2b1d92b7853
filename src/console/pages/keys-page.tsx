import { useState } from 'react';
import type { ApiKeyCreated, ApiKeyView, Scope } from '../../client/api-types';
import { SCOPES } from '../../modules/orgs/tenant';
import { api } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { ConfirmDialog } from '../components/dialog';
import { ProblemMessage } from '../components/problem-message';
import { SecretOnce } from '../components/secret-once';
import { useMemberEmails } from '../hooks/member-emails';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { describeKeyOwner, formatTime } from '../lib/format';
import { DataTable } from '../components/data-table';
import { RevocationCell } from '../components/revocation-cell';

/** The organization's API keys: created (the key shown once) and revoked. */
export function KeysPage() {
  const { can, member } = useMember();
  const keys = useResource(() => api.keys.list(), []);
  const emails = useMemberEmails();
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyView | null>(null);
  const revoke = useAction(async (key: ApiKeyView) => {
    await api.keys.revoke(key.id);
    setRevoking(null);
    keys.reload();
  });

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <ProblemMessage error={keys.error} />
      <DataTable label="API keys" columns={['Name', 'Scopes', 'Owner', 'Created', 'Status']}>
        {keys.data?.keys.map((key) => (
          <tr key={key.id}>
            <td>
              {key.name ?? '(unnamed)'} <span className="mono small">{key.id.slice(0, 8)}</span>
            </td>
            <td>{key.scopes.join(', ')}</td>
            <td>
              {key.ownerUnknown
                ? 'unknown: votes for nobody until attributed (key:attribute)'
                : key.owner === null
                  ? 'service key'
                  : key.owner.type === 'user' && key.owner.id === member.id
                    ? 'you'
                    : describeKeyOwner(key.owner, emails)}
            </td>
            <td>{formatTime(key.createdAt)}</td>
            <td>
              <RevocationCell
                revokedAt={key.revokedAt}
                mayRevoke={can('keys:write')}
                label={`Revoke key ${key.name ?? key.id.slice(0, 8)}`}
                onRevoke={() => setRevoking(key)}
              />
            </td>
          </tr>
        ))}
      </DataTable>
      {keys.data?.keys.length === 0 && <p className="empty">No API keys yet.</p>}
      {created && (
        <SecretOnce
          label={`API key ${created.key.name ?? created.key.id.slice(0, 8)}`}
          secret={created.secret}
          onDone={() => setCreated(null)}
        />
      )}
      {can('keys:write') && (
        <CreateKeyForm
          onCreated={(result) => {
            setCreated(result);
            keys.reload();
          }}
        />
      )}
      {revoking && (
        <ConfirmDialog
          title={`Revoke ${revoking.name ?? 'this key'}?`}
          message="Every request with it is refused from now on. This cannot be undone."
          confirmLabel="Revoke key"
          pending={revoke.pending}
          error={<ProblemMessage error={revoke.error} />}
          onConfirm={() => void revoke.run(revoking)}
          onClose={() => setRevoking(null)}
        />
      )}
    </section>
  );
}

function CreateKeyForm({ onCreated }: { onCreated(created: ApiKeyCreated): void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['approvals:write', 'approvals:read']);
  const create = useAction(async () => {
    onCreated(await api.keys.create({ scopes, ...(name.trim() ? { name: name.trim() } : {}) }));
    setName('');
  });
  return (
    <form className="panel stack" onSubmit={create.submit} aria-labelledby="new-key-title">
      <h2 id="new-key-title">New API key</h2>
      <label>
        Name (optional)
        <input value={name} onChange={(event) => setName(event.target.value)} placeholder="billing agent" />
      </label>
      <CheckboxGroup legend="Scopes" options={SCOPES} value={scopes} onChange={setScopes} />
      <ProblemMessage error={create.error} />
      <button type="submit" className="primary" disabled={create.pending}>
        Create key
      </button>
    </form>
  );
}
