import { useState } from 'react';
import type { MemberCreated, MemberRole, MemberView } from '../../client/api-types';
import { ROLES } from '../../modules/orgs/tenant';
import { api } from '../api';
import { ConfirmDialog, FormDialog } from '../components/dialog';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { formatTime } from '../lib/format';
import { DataTable } from '../components/data-table';

/** The organization's members; admins invite, change roles, remove and link Slack identities. */
export function MembersPage() {
  const { member: me, can } = useMember();
  const editable = can('members:write');
  const members = useResource(() => api.members.list(), []);
  const [removing, setRemoving] = useState<MemberView | null>(null);
  const [linking, setLinking] = useState<MemberView | null>(null);
  const replace = (changed: MemberView) =>
    members.update((data) => ({ members: data.members.map((known) => (known.id === changed.id ? changed : known)) }));
  const remove = useAction(async (member: MemberView) => {
    await api.members.remove(member.id);
    setRemoving(null);
    members.update((data) => ({ members: data.members.filter((known) => known.id !== member.id) }));
  });

  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      <ProblemMessage error={members.error} />
      <DataTable label="Members" columns={['Email', 'Name', 'Role', 'Last sign-in', 'Slack', ...(editable ? ['Actions'] : [])]}>
        {members.data?.members.map((member) => (
          <MemberRow
            key={member.id}
            member={member}
            isMe={member.id === me.id}
            editable={editable}
            onChanged={replace}
            onRemove={() => setRemoving(member)}
            onLinkSlack={() => setLinking(member)}
          />
        ))}
      </DataTable>
      {editable && <InviteForm onInvited={(created) => members.update((data) => ({ members: [...data.members, created.member] }))} />}
      {removing && (
        <ConfirmDialog
          title={`Remove ${removing.email}?`}
          message="Their sessions end at once. Their past decisions stay in the audit chain."
          confirmLabel="Remove member"
          pending={remove.pending}
          error={<ProblemMessage error={remove.error} />}
          onConfirm={() => void remove.run(removing)}
          onClose={() => {
            remove.reset();
            setRemoving(null);
          }}
        />
      )}
      {linking && (
        <SlackLinkDialog
          member={linking}
          onLinked={(linked) => {
            replace(linked);
            setLinking(null);
          }}
          onClose={() => setLinking(null)}
        />
      )}
    </section>
  );
}

function MemberRow({
  member,
  isMe,
  editable,
  onChanged,
  onRemove,
  onLinkSlack,
}: {
  member: MemberView;
  isMe: boolean;
  editable: boolean;
  onChanged(member: MemberView): void;
  onRemove(): void;
  onLinkSlack(): void;
}) {
  const update = useAction(async (patch: Parameters<typeof api.members.update>[1]) =>
    onChanged(await api.members.update(member.id, patch)),
  );
  return (
    <tr>
      <td className="break">
        {member.email}
        {isMe && ' (you)'}
      </td>
      <td>{member.name ?? '—'}</td>
      <td>
        {editable ? (
          <select
            aria-label={`Role of ${member.email}`}
            value={member.role}
            disabled={update.pending}
            onChange={(event) => void update.run({ role: event.target.value as MemberRole })}
          >
            {ROLES.map((role) => (
              <option key={role}>{role}</option>
            ))}
          </select>
        ) : (
          member.role
        )}
        <ProblemMessage error={update.error} />
      </td>
      <td>{member.lastSignInAt ? formatTime(member.lastSignInAt) : 'never (invite pending)'}</td>
      <td>
        {member.slackLinked ? 'linked' : 'not linked'}
        {editable &&
          (member.slackLinked ? (
            <button type="button" aria-label={`Clear Slack link of ${member.email}`} onClick={() => void update.run({ slack: null })}>
              Clear
            </button>
          ) : (
            <button type="button" aria-label={`Link Slack identity of ${member.email}`} onClick={onLinkSlack}>
              Link…
            </button>
          ))}
      </td>
      {editable && (
        <td>
          <button type="button" className="danger" aria-label={`Remove ${member.email}`} onClick={onRemove}>
            Remove
          </button>
        </td>
      )}
    </tr>
  );
}

function InviteForm({ onInvited }: { onInvited(created: MemberCreated): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<MemberRole>('reviewer');
  const [name, setName] = useState('');
  const [invited, setInvited] = useState<MemberCreated | null>(null);
  const invite = useAction(async () => {
    const created = await api.members.create({ email, role, ...(name.trim() ? { name: name.trim() } : {}) });
    setInvited(created);
    onInvited(created);
    setEmail('');
    setName('');
  });
  return (
    <form className="panel stack" onSubmit={invite.submit} aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a member</h2>
      <label>
        Email
        <input type="email" required value={email} onChange={(event) => setEmail(event.target.value)} />
      </label>
      <label>
        Role
        <select value={role} onChange={(event) => setRole(event.target.value as MemberRole)}>
          {ROLES.map((known) => (
            <option key={known}>{known}</option>
          ))}
        </select>
      </label>
      <label>
        Name (optional)
        <input value={name} onChange={(event) => setName(event.target.value)} />
      </label>
      <ProblemMessage error={invite.error} />
      <button type="submit" className="primary" disabled={invite.pending}>
        Send invite
      </button>
      {invited && (
        <div role="status" className="notice">
          <p>
            {invited.inviteMail === 'queued'
              ? `Invited ${invited.member.email}; an invite mail is on its way. The link also works when passed on (single use, valid 7 days):`
              : `Invited ${invited.member.email}. No mail was sent: this service has no mail server (SMTP_URL), so pass this link on yourself (single use, valid 7 days):`}
          </p>
          <input
            readOnly
            aria-label={`Invite link of ${invited.member.email}`}
            className="mono"
            value={invited.inviteUrl}
            onFocus={(event) => event.currentTarget.select()}
          />
        </div>
      )}
    </form>
  );
}

function SlackLinkDialog({ member, onLinked, onClose }: { member: MemberView; onLinked(member: MemberView): void; onClose(): void }) {
  const [teamId, setTeamId] = useState('');
  const [userId, setUserId] = useState('');
  const link = useAction(async () => onLinked(await api.members.update(member.id, { slack: { teamId, userId } })));
  return (
    <FormDialog
      title={`Link a Slack identity to ${member.email}`}
      submitLabel="Link"
      pending={link.pending}
      error={<ProblemMessage error={link.error} />}
      onSubmit={() => void link.run()}
      onClose={onClose}
    >
      <label>
        Slack team id
        <input required value={teamId} onChange={(event) => setTeamId(event.target.value)} placeholder="T0123ABCD" />
      </label>
      <label>
        Slack user id
        <input required value={userId} onChange={(event) => setUserId(event.target.value)} placeholder="U0123ABCD" />
      </label>
    </FormDialog>
  );
}
