import { useState, type FormEvent } from 'react';
import { Navigate, useParams } from 'react-router';
import { ApiError } from '../../client/api-client';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useSession } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';

/** /console/invite/:token: set a password (and a name), which accepts the invite and signs in. */
export function InvitePage() {
  const { token = '' } = useParams();
  const { signedIn } = useSession();
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [repeated, setRepeated] = useState('');
  const [accepted, setAccepted] = useState(false);
  const invite = useResource(() => api.invites.preview({ token }), [token]);
  const accept = useAction(async () => {
    signedIn(await api.invites.accept({ token, password, ...(name.trim() ? { name: name.trim() } : {}) }));
    setAccepted(true);
  });

  if (accepted) return <Navigate to="/" replace />;
  const mismatch = repeated !== '' && repeated !== password;
  const passwordError = accept.error instanceof ApiError ? accept.error.fieldError('password') : undefined;
  const isGone = (error: unknown) => error instanceof ApiError && error.status === 410;
  const gone = isGone(accept.error) || isGone(invite.error);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!mismatch) void accept.run();
  };
  return (
    <main id="main" className="narrow">
      <h1>{invite.data ? `Join ${invite.data.organization}` : 'Welcome to Approval Gate'}</h1>
      {invite.data && (
        <p>
          You are invited to <strong>{invite.data.organization}</strong> on Approval Gate as <strong>{invite.data.role}</strong>, with the
          email <strong>{invite.data.email}</strong>.
        </p>
      )}
      {!gone && invite.error !== null && <ProblemMessage error={invite.error} />}
      <p>Choose a password to accept your invite. You are signed in right after.</p>
      <form onSubmit={submit} className="stack">
        <label>
          Your name (optional)
          <input autoComplete="name" value={name} onChange={(event) => setName(event.target.value)} />
        </label>
        <label>
          New password
          <input
            type="password"
            autoComplete="new-password"
            required
            aria-invalid={passwordError !== undefined}
            aria-describedby="password-hint"
            value={password}
            onChange={(event) => setPassword(event.target.value)}
          />
          <span id="password-hint" className={passwordError ? 'field-error' : 'hint'}>
            {passwordError ?? 'At least 10 characters.'}
          </span>
        </label>
        <label>
          Repeat the password
          <input
            type="password"
            autoComplete="new-password"
            required
            aria-invalid={mismatch}
            value={repeated}
            onChange={(event) => setRepeated(event.target.value)}
          />
          {mismatch && <span className="field-error">The two passwords differ.</span>}
        </label>
        {gone ? (
          <p className="problem" role="alert">
            This invite is used or expired. Ask an admin of your organization for a new one.
          </p>
        ) : (
          passwordError === undefined && <ProblemMessage error={accept.error} />
        )}
        <button type="submit" className="primary" disabled={accept.pending || mismatch}>
          Set password and sign in
        </button>
      </form>
    </main>
  );
}
