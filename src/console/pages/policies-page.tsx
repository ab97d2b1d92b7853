import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { usePages } from '../hooks/use-pages';
import { ListEnd } from '../components/list-end';
import { formatDuration, formatTime } from '../lib/format';
import { DataTable } from '../components/data-table';

export function PoliciesPage() {
  const { can } = useMember();
  const navigate = useNavigate();
  const policies = usePages(async (cursor) => {
    const page = await api.policies.list(cursor ? { cursor } : {});
    return { items: page.policies, next: page.nextCursor };
  }, []);
  const [newKey, setNewKey] = useState('');
  const create = (event: FormEvent) => {
    event.preventDefault();
    if (newKey.trim()) navigate(`/policies/${encodeURIComponent(newKey.trim())}`);
  };
  return (
    <section aria-labelledby="policies-title">
      <h1 id="policies-title">Policies</h1>
      <ProblemMessage error={policies.error} />
      <DataTable label="Policies" columns={['Key', 'Rules', 'Default', 'Timeout', 'Version', 'Shadow', 'Updated']}>
        {policies.items.map((policy) => (
          <tr key={policy.key}>
            <td>
              <Link to={`/policies/${encodeURIComponent(policy.key)}`}>{policy.key}</Link>
            </td>
            <td>{policy.rules.length}</td>
            <td>{policy.defaultOutcome}</td>
            <td>
              {formatDuration(policy.timeoutSeconds * 1000)}, then {policy.onTimeout}
              {policy.escalateTo ? ` to ${policy.escalateTo}` : ''}
            </td>
            <td>{policy.version}</td>
            <td>{policy.shadow ? 'set' : '—'}</td>
            <td>{formatTime(policy.updatedAt)}</td>
          </tr>
        ))}
      </DataTable>
      <ListEnd list={policies} empty="No policies yet: every request is an orphan until one exists." />
      {can('policies:write') && (
        <form className="inline-form" onSubmit={create}>
          <label>
            New policy key
            <input value={newKey} onChange={(event) => setNewKey(event.target.value)} required />
          </label>
          <button type="submit">Create policy</button>
        </form>
      )}
    </section>
  );
}
