import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError } from '../../client/api-client';
import type { Scope, SessionView } from '../../client/api-types';
import { ROLE_SCOPES } from '../../modules/orgs/tenant';
import { api } from '../api';
import { initialSession } from '../lib/initial-session';

type SessionState = { status: 'loading' } | { status: 'signed-out'; notice?: string } | { status: 'signed-in'; session: SessionView };

interface SessionContextValue {
  state: SessionState;
  signedIn(session: SessionView): void;
  signOut(): Promise<void>;
  /** The API answered 401: the session ended elsewhere (signed out, member removed, timed out). */
  ended(): void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });

  useEffect(() => {
    initialSession.then(
      (session) => setState({ status: 'signed-in', session }),
      () => setState({ status: 'signed-out' }),
    );
  }, []);

  const signedIn = useCallback((session: SessionView) => setState({ status: 'signed-in', session }), []);
  const signOut = useCallback(async () => {
    await api.session.signOut().catch(() => undefined);
    setState({ status: 'signed-out', notice: 'You have signed out.' });
  }, []);
  const ended = useCallback(() => setState({ status: 'signed-out', notice: 'Your session has ended; sign in again.' }), []);

  const value = useMemo(() => ({ state, signedIn, signOut, ended }), [state, signedIn, signOut, ended]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionContextValue {
  const context = useContext(SessionContext);
  if (!context) throw new Error('useSession outside SessionProvider');
  return context;
}

/** The signed-in member and what their role allows: the same role-to-scope map the API enforces. */
export function useMember() {
  const { state } = useSession();
  if (state.status !== 'signed-in') throw new Error('useMember outside a signed-in page');
  const { member } = state.session;
  return { member, can: (scope: Scope) => ROLE_SCOPES[member.role].has(scope) };
}

/** Reports a failed request; a 401 means the session is gone, and the console returns to sign-in. */
export function useErrorReporter(): (error: unknown) => void {
  const { ended } = useSession();
  return useCallback(
    (error: unknown) => {
      if (error instanceof ApiError && error.status === 401) ended();
    },
    [ended],
  );
}
