import { useState } from 'react';
import { api } from '../api';
import { DelegationForm } from '../components/delegation-form';
import { ProblemMessage } from '../components/problem-message';
import { PushToggle } from '../components/push-toggle';
import { useMember } from '../hooks/session';
import { useAction } from '../hooks/use-resource';

/** The member's own settings. */
export function SettingsPage() {
  const { member } = useMember();
  const [emailNotifications, setEmailNotifications] = useState(member.emailNotifications);
  // The box follows the click at once, and goes back if the server refuses.
  const save = useAction(async (enabled: boolean) => {
    setEmailNotifications(enabled);
    try {
      setEmailNotifications((await api.members.updateSelf({ emailNotifications: enabled })).emailNotifications);
    } catch (error) {
      setEmailNotifications(!enabled);
      throw error;
    }
  });
  return (
    <section aria-labelledby="settings-title">
      <h1 id="settings-title">Your settings</h1>
      <dl className="facts">
        <dt>Email</dt>
        <dd>{member.email}</dd>
        <dt>Name</dt>
        <dd>{member.name ?? '—'}</dd>
        <dt>Role</dt>
        <dd>{member.role}</dd>
        <dt>Slack</dt>
        <dd>{member.slackLinked ? 'linked' : 'not linked'}</dd>
        <dt>Teams</dt>
        <dd>{member.teamsLinked ? 'linked' : 'not linked'}</dd>
      </dl>
      <label className="inline">
        <input
          type="checkbox"
          checked={emailNotifications}
          disabled={save.pending}
          onChange={(event) => void save.run(event.target.checked)}
        />
        Email me when a request waits for my decision
      </label>
      <ProblemMessage error={save.error} />
      <h2>Notifications on this device</h2>
      <PushToggle />
      <DelegationForm member={member} />
    </section>
  );
}
