import { Suspense } from 'react';
import { NavLink, Outlet } from 'react-router';
import type { Scope } from '../../client/api-types';
import { useMember, useSession } from '../hooks/session';

const SECTIONS: { to: string; label: string; scope?: Scope }[] = [
  { to: '/', label: 'Inbox', scope: 'approvals:read' },
  { to: '/history', label: 'History', scope: 'approvals:read' },
  { to: '/audit', label: 'Audit', scope: 'audit:read' },
  { to: '/policies', label: 'Policies', scope: 'policies:read' },
  { to: '/webhooks', label: 'Webhooks', scope: 'webhooks:read' },
  { to: '/keys', label: 'API keys', scope: 'keys:read' },
  { to: '/members', label: 'Members', scope: 'members:read' },
  { to: '/integrations', label: 'Integrations', scope: 'integrations:write' },
  { to: '/settings', label: 'Settings' },
];

/** Every signed-in page: the header with the sections this member's role may open, and the page. */
export function Layout() {
  const { member, can } = useMember();
  const { signOut } = useSession();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Approval Gate</span>
        <nav aria-label="Sections">
          {SECTIONS.filter((section) => !section.scope || can(section.scope)).map((section) => (
            <NavLink key={section.to} to={section.to} end={section.to === '/'}>
              {section.label}
            </NavLink>
          ))}
        </nav>
        <span className="who">
          <span className="email" title={member.email}>
            {member.email}
          </span>{' '}
          <span className="role">{member.role}</span>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main">
        <Suspense fallback={<p role="status">Loading…</p>}>
          <Outlet />
        </Suspense>
      </main>
    </>
  );
}
