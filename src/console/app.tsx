import { Navigate, Outlet, Route, Routes, useLocation } from 'react-router';
import { Layout } from './components/layout';
import { ApprovalEventsProvider } from './hooks/approval-events';
import { SessionProvider, useSession } from './hooks/session';
import { ApprovalPage } from './pages/approval-page';
import { AuditPage } from './pages/audit-page';
import { HistoryPage } from './pages/history-page';
import { InboxPage } from './pages/inbox-page';
import { InvitePage } from './pages/invite-page';
import { KeysPage } from './pages/keys-page';
import { MembersPage } from './pages/members-page';
import { PoliciesPage } from './pages/policies-page';
import { PolicyEditorPage } from './pages/policy-editor-page';
import { SettingsPage } from './pages/settings-page';
import { SignInPage, type SignInState } from './pages/sign-in-page';
import { WebhookPage } from './pages/webhook-page';
import { WebhooksPage } from './pages/webhooks-page';

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
        <Route path="sign-in" element={<SignInPage />} />
        <Route path="invite/:token" element={<InvitePage />} />
        <Route element={<RequireSession />}>
          <Route element={<Layout />}>
            <Route index element={<InboxPage />} />
            <Route path="approvals/:id" element={<ApprovalPage />} />
            <Route path="history" element={<HistoryPage />} />
            <Route path="audit" element={<AuditPage />} />
            <Route path="policies" element={<PoliciesPage />} />
            <Route path="policies/:key" element={<PolicyEditorPage />} />
            <Route path="webhooks" element={<WebhooksPage />} />
            <Route path="webhooks/:id" element={<WebhookPage />} />
            <Route path="keys" element={<KeysPage />} />
            <Route path="members" element={<MembersPage />} />
            <Route path="settings" element={<SettingsPage />} />
            <Route path="*" element={<NotFoundPage />} />
          </Route>
        </Route>
      </Routes>
    </SessionProvider>
  );
}
