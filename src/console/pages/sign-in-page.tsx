import { useState } from 'react';
import { Navigate, useLocation } from 'react-router';
import { ApiError } from '../../client/api-client';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useSession } from '../hooks/session';
import { useAction } from '../hooks/use-resource';

/** Where a signed-out visitor was going (a link from an email, say), to return there after signing in. */
export interface SignInState {
  from?: string;
}

export function SignInPage() {
  const { state, signedIn } = useSession();
  const location = useLocation();
  const from = (location.state as SignInState | null)?.from ?? '/';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [orgId, setOrgId] = useState('');
  const signIn = useAction(async () => signedIn(await api.session.signIn({ email, password, ...(orgId ? { orgId } : {}) })));

  if (state.status === 'signed-in') return <Navigate to={from} replace />;
  const orgIdError = signIn.error instanceof ApiError ? signIn.error.fieldError('orgId') : undefined;
  const askForOrg = orgIdError !== undefined || orgId !== '';

  return (
    <main id="main" className="narrow">
      <h1>Sign in to Approval Gate</h1>
      {state.status === 'signed-out' && state.notice && <p role="status">{state.notice}</p>}
      <form onSubmit={signIn.submit} className="stack">
        <label>
          Email
          <input type="email" autoComplete="username" required value={email} onChange={(event) => setEmail(event.target.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(event) => setPassword(event.target.value)}
          />
        </label>
        {askForOrg && (
          <label>
            Organization id
            <input
              value={orgId}
              required
              aria-invalid={orgIdError !== undefined}
              aria-describedby="org-id-hint"
              onChange={(event) => setOrgId(event.target.value)}
            />
            <span id="org-id-hint" className="hint">
              {orgIdError ?? 'The organization to sign in to.'}
            </span>
          </label>
        )}
        {orgIdError === undefined && <ProblemMessage error={signIn.error} />}
        <button type="submit" className="primary" disabled={signIn.pending}>
          Sign in
        </button>
      </form>
      <p className="hint">New here? Open the invite link an admin sent you to set your password.</p>
    </main>
  );
}
