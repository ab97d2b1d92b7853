import type { ApprovalList, ApprovalListQuery } from '../../client/api-types';
import { api } from '../api';

/** Where the console is served: the router's basename. */
export const CONSOLE_BASE = '/console';

/**
 * What the inbox lists: by default the pending requests this member may decide and has not voted
 * on yet (the API's `decidable` filter applies the policies' reviewers, channels and self-approval
 * rules); "every pending request" drops that filter. A member who decides nothing (a viewer) sees
 * every pending request, read-only. The first page, the live refresh and "load more" all follow
 * this query.
 */
export type InboxScope = 'mine' | 'all';
export function inboxQuery(scope: InboxScope): ApprovalListQuery {
  // Rows name the key that created each request beside its agent and policy.
  return scope === 'mine'
    ? { status: 'pending', decidable: 'true', include: 'createdByKey' }
    : { status: 'pending', include: 'createdByKey' };
}

const SCOPE_KEY = 'approval-gate.inbox-scope';

/** The scope this browser chose last (a viewer's is always "all"), so that the early first page below asks what the inbox will show. */
export function rememberedScope(): InboxScope {
  try {
    return localStorage.getItem(SCOPE_KEY) === 'all' ? 'all' : 'mine';
  } catch {
    return 'mine';
  }
}

export function rememberScope(scope: InboxScope): void {
  try {
    localStorage.setItem(SCOPE_KEY, scope);
  } catch {
    // Storage refused (a private window's quota, a policy): the inbox only asks a little later next time.
  }
}

/**
 * The inbox's first page, asked for as the bundle starts when the console opens on the inbox,
 * beside the session (lib/initial-session.ts) and before React's modules run (main.tsx imports
 * this module before React), instead of after the session and React's first render: the rows then
 * wait for one request, which runs while React starts. Taken once, and only by an inbox that asks
 * the same; any other read asks afresh.
 */
let early: { scope: InboxScope; page: Promise<ApprovalList> } | null = null;
if (window.location.pathname.replace(/\/+$/, '') === CONSOLE_BASE) {
  const scope = rememberedScope();
  early = { scope, page: api.approvals.list(inboxQuery(scope)) };
  // A refusal (signed out) is read by the session; unread here, it is not an unhandled rejection.
  early.page.catch(() => undefined);
}

/**
 * A refused early page is asked for again: it may have been sent signed out, before the sign-in
 * that opened this inbox.
 */
export function firstInboxPage(scope: InboxScope): Promise<ApprovalList> {
  const taken = early;
  early = null;
  const ask = () => api.approvals.list(inboxQuery(scope));
  return taken && taken.scope === scope ? taken.page.catch(ask) : ask();
}
