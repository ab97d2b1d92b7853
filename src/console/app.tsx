import { lazy, Suspense, type ComponentType, type ReactNode } from 'react';
import { Navigate, Outlet, Route, Routes, useLocation } from 'react-router';
import { Layout } from './components/layout';
import { ApprovalEventsProvider } from './hooks/approval-events';
import { SessionProvider, useSession } from './hooks/session';
import { InboxPage } from './pages/inbox-page';
import type { SignInState } from './pages/sign-in-page';

/**
 * Pages other than the inbox load when first opened, so the first screen a reviewer sees waits for
 * as little JavaScript as possible; sign-in too, which a signed-in reviewer never sees.
 */
function page<M>(load: () => Promise<M>, name: keyof M) {
  return lazy(async () => ({ default: (await load())[name] as ComponentType }));
}
const ApprovalPage = page(() => import('./pages/approval-page'), 'ApprovalPage');
const AuditPage = page(() => import('./pages/audit-page'), 'AuditPage');
const HistoryPage = page(() => import('./pages/history-page'), 'HistoryPage');
const IntegrationsPage = page(() => import('./pages/integrations-page'), 'IntegrationsPage');
const StandingApprovalsPage = page(() => import('./pages/standing-approvals-page'), 'StandingApprovalsPage');
const InvitePage = page(() => import('./pages/invite-page'), 'InvitePage');
const KeysPage = page(() => import('./pages/keys-page'), 'KeysPage');
const MembersPage = page(() => import('./pages/members-page'), 'MembersPage');
const PoliciesPage = page(() => import('./pages/policies-page'), 'PoliciesPage');
const PolicyEditorPage = page(() => import('./pages/policy-editor-page'), 'PolicyEditorPage');
const SignInPage = page(() => import('./pages/sign-in-page'), 'SignInPage');
const SettingsPage = page(() => import('./pages/settings-page'), 'SettingsPage');
const SlackLinkPage = page(() => import('./pages/slack-link-page'), 'SlackLinkPage');
const TeamsLinkPage = page(() => import('./pages/teams-link-page'), 'TeamsLinkPage');
const WebhookPage = page(() => import('./pages/webhook-page'), 'WebhookPage');
const WebhooksPage = page(() => import('./pages/webhooks-page'), 'WebhooksPage');

/** Pages behind sign-in: a visitor without a session is sent to sign in, and back here after. */
function RequireSession() {
  const { state } = useSession();
  const location = useLocation();
  if (state.status === 'loading') return <p role="status">Loading…</p>;
  if (state.status === 'signed-out') {
    const from: SignInState = { from: `${location.pathname}${location.search}` };
    return <Navigate to="/sign-in" replace state={from} />;
  }
  return (
    <ApprovalEventsProvider>
      <Outlet />
    </ApprovalEventsProvider>
  );
}

/** A page outside the signed-in layout, loaded when first opened. */
function Outside({ page }: { page: ReactNode }) {
  return <Suspense fallback={<p role="status">Loading…</p>}>{page}</Suspense>;
}

function NotFoundPage() {
  return (
    <section>
      <h1>Not found</h1>
      <p>There is no page at this address.</p>
    </section>
  );
}

export function App() {
  return (
    <SessionProvider>
      <Routes>
        <Route path="sign-in" element={<Outside page={<SignInPage />} />} />
        <Route path="invite/:token" element={<Outside page={<InvitePage />} />} />
        <Route element={<RequireSession />}>
          <Route element={<Layout />}>
            <Route index element={<InboxPage />} />
            <Route path="approvals/:id" element={<ApprovalPage />} />
            <Route path="history" element={<HistoryPage />} />
            <Route path="standing-approvals" element={<StandingApprovalsPage />} />
            <Route path="audit" element={<AuditPage />} />
            <Route path="policies" element={<PoliciesPage />} />
            <Route path="policies/:key" element={<PolicyEditorPage />} />
            <Route path="webhooks" element={<WebhooksPage />} />
            <Route path="webhooks/:id" element={<WebhookPage />} />
            <Route path="keys" element={<KeysPage />} />
            <Route path="members" element={<MembersPage />} />
            <Route path="integrations" element={<IntegrationsPage />} />
            <Route path="settings" element={<SettingsPage />} />
            <Route path="link-slack/:token" element={<SlackLinkPage />} />
            <Route path="link-teams/:token" element={<TeamsLinkPage />} />
            <Route path="*" element={<NotFoundPage />} />
          </Route>
        </Route>
      </Routes>
    </SessionProvider>
  );
}
