import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { ApprovalFeedEvent } from '../../client/api-types';
import { ApiError } from '../../client/api-client';
import { api } from '../api';
import { useErrorReporter } from './session';

export interface ApprovalEventsListener {
  /** An approval was created, voted on or settled, here or in any other process. */
  onEvent?(event: ApprovalFeedEvent): void;
  /** The stream (re)connected or was told to start over: what a page shows may be stale; read it again. */
  onResync?(): void;
}

export type StreamState = 'connecting' | 'live' | 'reconnecting';

interface ApprovalEventsContextValue {
  subscribe(listener: ApprovalEventsListener): () => void;
  state: StreamState;
}

const ApprovalEventsContext = createContext<ApprovalEventsContextValue | null>(null);

/** A stream that the browser gave up on (an error status, not a dropped connection) is opened again after this. */
const REOPEN_AFTER_MS = 5000;

/**
 * One server-sent events stream per open console (GET /v1/approvals/events), shared by its pages.
 * A dropped connection is resumed by the browser with Last-Event-ID, and the server replays what
 * was missed; a stream opened afresh tells the pages to read their data again.
 */
export function ApprovalEventsProvider({ children }: { children: ReactNode }) {
  const listeners = useRef(new Set<ApprovalEventsListener>());
  const [state, setState] = useState<StreamState>('connecting');
  const report = useErrorReporter();

  useEffect(() => {
    let source: EventSource | null = null;
    let reopen: number | undefined;
    let stopped = false;
    const each = (call: (listener: ApprovalEventsListener) => void) => listeners.current.forEach(call);
    const open = () => {
      if (stopped) return;
      source = new EventSource(api.url('/v1/approvals/events'));
      source.addEventListener('open', () => {
        setState('live');
        each((listener) => listener.onResync?.());
      });
      source.addEventListener('approval', (message) => {
        const event = JSON.parse((message as MessageEvent<string>).data) as ApprovalFeedEvent;
        each((listener) => listener.onEvent?.(event));
      });
      source.addEventListener('reset', () => each((listener) => listener.onResync?.()));
      source.addEventListener('error', () => {
        setState('reconnecting');
        if (source?.readyState === EventSource.CLOSED) reopenLater();
      });
    };
    // The browser gives up on an error status without saying which: the session tells whether
    // it has ended (a 401 returns the console to sign-in) or the server is only unavailable.
    const reopenLater = () => {
      reopen = window.setTimeout(
        () =>
          void api.session.current().then(open, (error: unknown) => {
            report(error);
            if (!(error instanceof ApiError && error.status === 401)) reopenLater();
          }),
        REOPEN_AFTER_MS,
      );
    };
    open();
    return () => {
      stopped = true;
      window.clearTimeout(reopen);
      source?.close();
    };
  }, [report]);

  const subscribe = useCallback((listener: ApprovalEventsListener) => {
    listeners.current.add(listener);
    return () => void listeners.current.delete(listener);
  }, []);
  const value = useMemo(() => ({ subscribe, state }), [subscribe, state]);
  return <ApprovalEventsContext.Provider value={value}>{children}</ApprovalEventsContext.Provider>;
}

/** Follows the console's approval events while the calling page is open; returns the stream's state. */
export function useApprovalEvents(listener: ApprovalEventsListener): StreamState {
  const context = useContext(ApprovalEventsContext);
  if (!context) throw new Error('useApprovalEvents outside ApprovalEventsProvider');
  const latest = useRef(listener);
  latest.current = listener;
  const { subscribe } = context;
  useEffect(
    () =>
      subscribe({
        onEvent: (event) => latest.current.onEvent?.(event),
        onResync: () => latest.current.onResync?.(),
      }),
    [subscribe],
  );
  return context.state;
}
