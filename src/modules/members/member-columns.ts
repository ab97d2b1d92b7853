import type { ColumnMap } from '../../data/columns.js';
import type { Member, Session } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const MEMBER_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  email: 'email',
  emailKey: 'email_key',
  name: 'name',
  role: 'role',
  passwordHash: 'password_hash',
  emailNotifications: 'email_notifications',
  slackTeamId: 'slack_team_id',
  slackUserId: 'slack_user_id',
  teamsAadObjectId: 'teams_aad_object_id',
  delegateId: 'delegate_id',
  delegationStartsAt: 'delegation_starts_at',
  delegationEndsAt: 'delegation_ends_at',
  createdAt: 'created_at',
  lastSignInAt: 'last_sign_in_at',
} as const satisfies ColumnMap<Member>;

export const SESSION_COLUMNS = {
  id: 'id',
  tokenHash: 'token_hash',
  memberId: 'member_id',
  csrfToken: 'csrf_token',
  createdAt: 'created_at',
  lastUsedAt: 'last_used_at',
  expiresAt: 'expires_at',
} as const satisfies ColumnMap<Session>;
