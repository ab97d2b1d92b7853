import { useState } from 'react';
import type { MemberView } from '../../client/api-types';
import { api } from '../api';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';
import { isoToLocalInput, localInputToIso } from '../lib/datetime-input';
import { ProblemMessage } from './problem-message';

/**
 * Who decides in the signed-in member's place while they are away (docs/members-and-channels.md#delegation):
 * the delegate is picked among the members who may decide, until a time the member chooses.
 */
export function DelegationForm({ member }: { member: MemberView }) {
  const members = useResource(() => api.members.list(), []);
  const [delegation, setDelegation] = useState(member.delegation);
  const [delegateId, setDelegateId] = useState(member.delegation?.delegateId ?? '');
  const [endsAt, setEndsAt] = useState(isoToLocalInput(member.delegation?.endsAt ?? null));
  const candidates = (members.data?.members ?? []).filter((other) => other.id !== member.id && other.role !== 'viewer');
  const emailOf = (id: string) => members.data?.members.find((other) => other.id === id)?.email ?? id;

  const save = useAction(async () => {
    const until = localInputToIso(endsAt);
    setDelegation((await api.members.delegate({ delegateId, endsAt: until ?? endsAt })).delegation);
  });
  const end = useAction(async () => {
    setDelegation((await api.members.delegate(null)).delegation);
    setDelegateId('');
    setEndsAt('');
  });

  if (member.role === 'viewer') return null;
  return (
    <section aria-labelledby="delegation-title">
      <h2 id="delegation-title">While you are away</h2>
      {delegation ? (
        <p role="status">
          {emailOf(delegation.delegateId)} decides in your place
          {delegation.startsAt ? ` from ${formatTime(delegation.startsAt)}` : ''} until {formatTime(delegation.endsAt)}.{' '}
          <button type="button" className="danger" onClick={() => void end.run()} disabled={end.pending}>
            End it now
          </button>
        </p>
      ) : (
        <p>Name someone to decide the requests waiting for you, until you are back. They vote as themselves.</p>
      )}
      <form className="inline-form" onSubmit={save.submit}>
        <label>
          Delegate
          <select value={delegateId} onChange={(event) => setDelegateId(event.target.value)} disabled={members.data === undefined} required>
            <option value="">{members.data === undefined ? 'Loading members…' : 'Choose a member'}</option>
            {candidates.map((other) => (
              <option key={other.id} value={other.id}>
                {other.email}
              </option>
            ))}
          </select>
        </label>
        <label>
          Until
          <input type="datetime-local" value={endsAt} onChange={(event) => setEndsAt(event.target.value)} required />
        </label>
        <button type="submit" disabled={save.pending || !delegateId || !endsAt}>
          {delegation ? 'Change' : 'Delegate'}
        </button>
      </form>
      <ProblemMessage error={save.error ?? end.error} />
    </section>
  );
}
