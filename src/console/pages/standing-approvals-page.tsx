import { useState } from 'react';
import type { StandingApprovalView } from '../../client/api-types';
import { api } from '../api';
import { DataTable } from '../components/data-table';
import { RevocationCell } from '../components/revocation-cell';
import { ConfirmDialog } from '../components/dialog';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';

function describeMatch(standing: StandingApprovalView): string {
  if (!standing.fields) return 'the same payload';
  return Object.entries(standing.fields)
    .map(([field, value]) => `${field} = ${JSON.stringify(value)}`)
    .join(', ');
}

/**
 * The organization's standing approvals (docs/policies.md#standing-approvals): what each approves,
 * who granted it and until when; its granter, or an admin, revokes it.
 */
export function StandingApprovalsPage() {
  const { member, can } = useMember();
  const [showEnded, setShowEnded] = useState(false);
  const list = useResource(() => api.standingApprovals.list(showEnded ? {} : { active: 'true' }), [showEnded]);
  const [revoking, setRevoking] = useState<StandingApprovalView | null>(null);
  const revoke = useAction(async (standing: StandingApprovalView) => {
    await api.standingApprovals.revoke(standing.id);
    setRevoking(null);
    list.reload();
  });
  const mayRevoke = (standing: StandingApprovalView) =>
    standing.active && can('approvals:decide') && (standing.grantedBy.id === member.id || member.role === 'admin');

  return (
    <section aria-labelledby="standing-title">
      <h1 id="standing-title">Standing approvals</h1>
      <p className="hint">
        Each approves new requests identical to one a reviewer approved, until it ends or is revoked: same policy, action, agent and
        requesting key.
      </p>
      <label className="inline">
        <input type="checkbox" checked={showEnded} onChange={(event) => setShowEnded(event.target.checked)} />
        Show revoked and expired ones too
      </label>
      <ProblemMessage error={list.error} />
      <DataTable label="Standing approvals" columns={['Policy', 'Action', 'Agent', 'Identical means', 'Granted by', 'Until', 'Status']}>
        {list.data?.standingApprovals.map((standing) => (
          <tr key={standing.id}>
            <td>{standing.policyKey}</td>
            <td>{standing.action}</td>
            <td>{standing.agent ?? '—'}</td>
            <td className="break">{describeMatch(standing)}</td>
            <td>{standing.grantedBy.id === member.id ? 'you' : standing.grantedBy.email}</td>
            <td>{formatTime(standing.expiresAt)}</td>
            <td>
              <RevocationCell
                revokedAt={standing.revokedAt}
                ended={!standing.active}
                mayRevoke={mayRevoke(standing)}
                label={`Revoke the standing approval of ${standing.action} for ${standing.agent ?? 'its requester'}`}
                onRevoke={() => setRevoking(standing)}
              />
            </td>
          </tr>
        ))}
      </DataTable>
      {list.data?.standingApprovals.length === 0 && <p className="empty">No standing approvals{showEnded ? '' : ' are active'}.</p>}
      {revoking && (
        <ConfirmDialog
          title="Revoke this standing approval?"
          message={`New ${revoking.action} requests matching it wait for a reviewer again from now on.`}
          confirmLabel="Revoke standing approval"
          pending={revoke.pending}
          error={<ProblemMessage error={revoke.error} />}
          onConfirm={() => void revoke.run(revoking)}
          onClose={() => setRevoking(null)}
        />
      )}
    </section>
  );
}
