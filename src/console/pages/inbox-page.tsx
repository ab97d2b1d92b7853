import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { ApiError } from '../../client/api-client';
import type { ApprovalView } from '../../client/api-types';
import { api } from '../api';
import { errorText, ProblemMessage } from '../components/problem-message';
import { TimeLeft } from '../components/time-left';
import { useApprovalEvents } from '../hooks/approval-events';
import { useErrorReporter, useMember } from '../hooks/session';
import { formatTime, quorumText } from '../lib/format';
import { withFreshHead } from '../lib/approval-order';
import { firstInboxPage, inboxQuery, rememberedScope, rememberScope, type InboxScope } from '../lib/inbox-query';
import { summarizePayload, type PayloadSummary } from '../lib/payload-summary';
import type { DecisionState } from './approval-page';

// The dialog opens only when a reviewer rejects: the inbox's first rows do not wait for it.
const RejectDialog = lazy(async () => ({ default: (await import('../components/reject-dialog')).RejectDialog }));

interface Row {
  approval: ApprovalView;
  summary: PayloadSummary;
  /** What the search box matches, lower-cased. */
  haystack: string;
}

function toRow(approval: ApprovalView): Row {
  const summary = summarizePayload(approval.payload);
  const haystack = [approval.action, approval.agent ?? '', approval.policyKey, keyName(approval) ?? '', summary.text, summary.amount ?? '']
    .join(' ')
    .toLowerCase();
  return { approval, summary, haystack };
}

/** Live events arriving in a burst cost one refresh of the first page. */
const REFRESH_DEBOUNCE_MS = 150;

const shortId = (approval: ApprovalView) => approval.id.slice(0, 8);

/** The name of the API key that created the request (its id's start when it has none), or null when no key did. */
function keyName({ createdByKey }: ApprovalView): string | null {
  return createdByKey ? (createdByKey.name ?? `${createdByKey.id.slice(0, 8)}…`) : null;
}

/** The approval page with the request-changes form open, for the `c` key and the row's button. */
const REQUEST_CHANGES: DecisionState = { decide: 'changes' };

export function InboxPage() {
  const { can } = useMember();
  const [scope, setScope] = useState<InboxScope>(can('approvals:decide') ? rememberedScope() : 'all');
  // Deciding from a row only where the list holds what this member may decide.
  const canDecide = can('approvals:decide') && scope === 'mine';
  const query = inboxQuery(scope);
  const [search, setSearch] = useState('');
  const navigate = useNavigate();
  const report = useErrorReporter();
  const [items, setItems] = useState<ApprovalView[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [selected, setSelected] = useState(0);
  const [rejecting, setRejecting] = useState<ApprovalView | null>(null);
  const [notice, setNotice] = useState<{ text: string; alert: boolean } | null>(null);
  const rowLinks = useRef(new Map<string, HTMLAnchorElement>());
  // Reads of the first page, numbered as sent: an answer shows unless a later read's already does,
  // or it was sent before the scope changed.
  const refreshesSent = useRef(0);
  const outdatedUpTo = useRef(0);
  const refreshTimer = useRef<number | undefined>(undefined);

  /** Reads the first page again; `keepOlder` keeps the rows loaded below it ("load more"). */
  const refreshHead = useCallback(
    async (keepOlder: boolean) => {
      const ticket = ++refreshesSent.current;
      try {
        const page = await (keepOlder ? api.approvals.list(query) : firstInboxPage(scope));
        // An earlier read still shows while a later one runs: the live stream's opening asks again
        // as the first page is on its way, and the rows should not wait for both.
        if (ticket <= outdatedUpTo.current) return;
        outdatedUpTo.current = ticket;
        setItems((current) => (keepOlder ? withFreshHead(page.approvals, page.nextCursor !== null, current) : page.approvals));
        // Kept rows end where the old cursor points (null: nothing older was left to load).
        setNextCursor((current) => (keepOlder && page.nextCursor !== null ? current : page.nextCursor));
        setLoaded(true);
        setLoadError(null);
      } catch (error) {
        report(error);
        setLoadError(error);
      }
    },
    // The query follows the scope chosen.
    [report, scope],
  );

  useEffect(() => {
    outdatedUpTo.current = refreshesSent.current;
    void refreshHead(false);
    return () => window.clearTimeout(refreshTimer.current);
  }, [refreshHead]);

  const streamState = useApprovalEvents({
    onEvent: (event) => {
      if (event.status !== 'pending') setItems((current) => current.filter((approval) => approval.id !== event.approvalId));
      window.clearTimeout(refreshTimer.current);
      refreshTimer.current = window.setTimeout(() => void refreshHead(true), REFRESH_DEBOUNCE_MS);
    },
    onResync: () => void refreshHead(false),
  });

  const allRows = useMemo(() => items.map(toRow), [items]);
  const needle = search.trim().toLowerCase();
  // Search reads the rows loaded so far: the API's filters match whole values only (docs/members-and-channels.md#the-console).
  const rows = needle ? allRows.filter((row) => row.haystack.includes(needle)) : allRows;
  const visible = rows.map((row) => row.approval);
  const current = rows[Math.min(selected, rows.length - 1)];
  useEffect(() => {
    if (selected >= rows.length && rows.length > 0) setSelected(rows.length - 1);
  }, [rows.length, selected]);

  const removeDecided = (decided: ApprovalView, verb: string) => {
    setItems((list) => list.filter((approval) => approval.id !== decided.id));
    const outcome = decided.status === 'pending' ? `your vote is recorded; ${quorumText(decided)}` : `now ${decided.status}`;
    setNotice({ text: `${verb} ${decided.action} (${shortId(decided)}): ${outcome}.`, alert: false });
  };

  const approve = async (approval: ApprovalView) => {
    try {
      removeDecided(await api.approvals.decide(approval.id, { verdict: 'approved' }), 'Approved');
    } catch (error) {
      report(error);
      setNotice({ text: `Could not approve ${approval.action} (${shortId(approval)}): ${errorText(error)}`, alert: true });
      if (error instanceof ApiError && error.status === 409) void refreshHead(true);
    }
  };

  const loadMore = async () => {
    if (!nextCursor) return;
    try {
      const page = await api.approvals.list({ ...query, cursor: nextCursor });
      setItems((list) => [...list, ...page.approvals.filter((approval) => !list.some((known) => known.id === approval.id))]);
      setNextCursor(page.nextCursor);
    } catch (error) {
      report(error);
      setLoadError(error);
    }
  };

  const select = (index: number) => {
    if (visible.length === 0) return;
    const next = Math.max(0, Math.min(visible.length - 1, index));
    setSelected(next);
    rowLinks.current.get(visible[next]!.id)?.focus();
  };

  const searchBox = useRef<HTMLInputElement>(null);
  const requestChanges = (approval: ApprovalView) => navigate(`/approvals/${approval.id}`, { state: REQUEST_CHANGES });

  // j/k/a/r/c/enter triage and / to search, unless the reviewer is typing or a dialog is open.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || rejecting) return;
      const target = event.target as HTMLElement;
      if (target.closest('input, textarea, select, dialog, [contenteditable="true"]')) return;
      const position = Math.min(selected, rows.length - 1);
      if (event.key === 'j') select(position + 1);
      else if (event.key === 'k') select(position - 1);
      else if (event.key === 'a' && current && canDecide && current.summary.complete) void approve(current.approval);
      else if (event.key === 'r' && current && canDecide) setRejecting(current.approval);
      else if (event.key === 'c' && current && canDecide) requestChanges(current.approval);
      else if (event.key === '/') searchBox.current?.focus();
      else if (event.key === 'Enter' && current && !target.closest('a, button')) navigate(`/approvals/${current.approval.id}`);
      else return;
      event.preventDefault();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  });

  const countText = `${items.length}${nextCursor ? '+' : ''} pending`;
  return (
    <section aria-labelledby="inbox-title">
      <div className="page-head">
        <h1 id="inbox-title">Inbox</h1>
        <span className="count" aria-label={`${countText} ${scope === 'mine' ? 'for your decision' : 'in all'}`}>
          {countText}
        </span>
        <span className={`stream stream-${streamState}`} role="status">
          {streamState === 'live' ? 'Live' : streamState === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
        </span>
      </div>
      <p className="hint">
        {canDecide
          ? 'Requests waiting for your decision, newest first. Keys: j / k move, a approves (where the row shows the whole payload), r rejects, c requests changes, Enter opens, / searches.'
          : 'Every pending request, newest first. Keys: j / k move, Enter opens, / searches.'}
      </p>
      <div className="inbox-filters" role="search">
        <label>
          Search loaded requests
          <input
            ref={searchBox}
            type="search"
            aria-keyshortcuts="/"
            value={search}
            onChange={(event) => setSearch(event.target.value)}
            placeholder="action, payload, agent, policy"
          />
        </label>
        {can('approvals:decide') && (
          <label>
            Show
            <select
              value={scope}
              onChange={(event) => {
                const chosen = event.target.value as InboxScope;
                rememberScope(chosen);
                setScope(chosen);
              }}
            >
              <option value="mine">Waiting for my decision</option>
              <option value="all">Every pending request (read-only)</option>
            </select>
          </label>
        )}
      </div>
      {notice && (
        <p className={notice.alert ? 'problem' : 'notice'} role={notice.alert ? 'alert' : 'status'}>
          {notice.text}
        </p>
      )}
      <ProblemMessage error={loadError} />
      {loaded && items.length === 0 && <p className="empty">Nothing waits for {canDecide ? 'your' : 'a'} decision.</p>}
      {loaded && items.length > 0 && rows.length === 0 && (
        <p className="empty">
          No loaded request matches “{search.trim()}”{nextCursor ? '; load more to search further.' : '.'}
        </p>
      )}
      <ol className="rows" aria-label="Pending approvals">
        {rows.map(({ approval, summary }, index) => (
          <li
            key={approval.id}
            className={index === selected ? 'row selected' : 'row'}
            aria-current={index === selected ? 'true' : undefined}
            onClick={() => setSelected(index)}
          >
            <div className="row-main">
              <span className="row-title">
                <Link
                  to={`/approvals/${approval.id}`}
                  ref={(link) => {
                    if (link) rowLinks.current.set(approval.id, link);
                    else rowLinks.current.delete(approval.id);
                  }}
                  onFocus={() => setSelected(index)}
                >
                  {approval.action}
                </Link>
                {summary.amount && <strong className="amount">{summary.amount}</strong>}
              </span>
              <code className="summary">{summary.text}</code>
              <span className="meta">
                {approval.agent ? `agent ${approval.agent}` : 'no agent'}
                {keyName(approval) && ` · key ${keyName(approval)}`} · policy {approval.policyKey} · {formatTime(approval.createdAt)}
              </span>
            </div>
            <span className="row-time">
              <TimeLeft expiresAt={approval.expiresAt} />
            </span>
            {canDecide && (
              <span className="row-actions">
                {summary.complete ? (
                  <button
                    type="button"
                    aria-label={`Approve ${approval.action} ${shortId(approval)}`}
                    aria-keyshortcuts="a"
                    onClick={() => void approve(approval)}
                  >
                    Approve
                  </button>
                ) : (
                  <Link
                    className="button"
                    to={`/approvals/${approval.id}`}
                    aria-label={`Review the whole payload of ${approval.action} ${shortId(approval)}`}
                  >
                    Review
                  </Link>
                )}
                <Link
                  className="button"
                  to={`/approvals/${approval.id}`}
                  state={REQUEST_CHANGES}
                  aria-label={`Request changes to ${approval.action} ${shortId(approval)}`}
                  aria-keyshortcuts="c"
                >
                  Changes…
                </Link>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Reject ${approval.action} ${shortId(approval)}`}
                  aria-keyshortcuts="r"
                  onClick={() => setRejecting(approval)}
                >
                  Reject
                </button>
              </span>
            )}
          </li>
        ))}
      </ol>
      {nextCursor && (
        <button type="button" onClick={() => void loadMore()}>
          Load more
        </button>
      )}
      {rejecting && (
        <Suspense fallback={null}>
          <RejectDialog
            approval={rejecting}
            onClose={() => setRejecting(null)}
            onDecided={(decided) => {
              setRejecting(null);
              removeDecided(decided, 'Rejected');
            }}
          />
        </Suspense>
      )}
    </section>
  );
}
