import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { useResource } from '../hooks/use-resource';
import { formatDuration, formatTime } from '../lib/format';
import { DataTable } from '../components/data-table';

export function PoliciesPage() {
  const { can } = useMember();
  const navigate = useNavigate();
  const policies = useResource(() => api.policies.list(), []);
  const [newKey, setNewKey] = useState('');
  const create = (event: FormEvent) => {
    event.preventDefault();
    if (newKey.trim()) navigate(`/policies/${encodeURIComponent(newKey.trim())}`);
  };
  return (
    <section aria-labelledby="policies-title">
      <h1 id="policies-title">Policies</h1>
      <ProblemMessage error={policies.error} />
      <DataTable label="Policies" columns={['Key', 'Rules', 'Default', 'Timeout', 'Updated']}>
        {policies.data?.policies.map((policy) => (
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
            <td>{formatTime(policy.updatedAt)}</td>
          </tr>
        ))}
      </DataTable>
      {policies.data?.policies.length === 0 && <p className="empty">No policies yet: every request is an orphan until one exists.</p>}
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
