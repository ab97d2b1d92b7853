import type { Database, DatabaseClient, Sql } from '../../data/database.js';
import type { Member, MemberRole, Plan, Prisma } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents } from '../audit/audit-store.js';
import { revokeMemberKeys, type ApiKey } from '../orgs/org-store.js';
import type { Scope } from '../orgs/tenant.js';

export type { Member };

/** What every session-authenticated request needs, read by one prepared statement. */
export interface SessionGrant {
  sessionId: string;
  csrfToken: string;
  lastUsedAt: Date;
  memberId: string;
  email: string;
  role: MemberRole;
  orgId: string;
  plan: Plan;
}

export type MemberChanges = Partial<Pick<Member, 'role' | 'name' | 'slackTeamId' | 'slackUserId' | 'emailNotifications'>>;

/** The outcome of a change that must leave the organization an admin. */
export type AdminGuarded<T> = { kind: 'done'; value: T } | { kind: 'not_found' } | { kind: 'last_admin' };

/** Members, their invites and sessions. Organization-scoped calls take the org id explicitly. */
export class MemberStore {
  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
  ) {}

  list(orgId: string): Promise<Member[]> {
    return this.db.member.findMany({ where: { orgId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  }

  find(orgId: string, id: string): Promise<Member | null> {
    return this.db.member.findFirst({ where: { orgId, id } });
  }

  /** Members with this email (any organization) that can sign in, i.e. have set a password. */
  findSignable(emailKey: string, orgId: string | undefined): Promise<Member[]> {
    return this.db.member.findMany({ where: { emailKey, passwordHash: { not: null }, ...(orgId ? { orgId } : {}) } });
  }

  /** Creates the member with its first invite and audit event; null when the email is taken in the org. */
  async create(
    member: Pick<Member, 'orgId' | 'email' | 'emailKey' | 'name' | 'role'>,
    invite: { tokenHash: Uint8Array<ArrayBuffer>; expiresAt: Date },
    event: (member: Member) => AuditEventDraft,
  ): Promise<Member | null> {
    try {
      return await this.db.$transaction(async (tx) => {
        const created = await tx.member.create({ data: { ...member, invites: { create: invite } } });
        await appendAuditEvents(tx, member.orgId, [event(created)]);
        return created;
      });
    } catch (error) {
      if ((error as { code?: string }).code === 'P2002') return null;
      throw error;
    }
  }

  /**
   * Applies changes under the rule that an organization keeps an admin: the org's admin rows are
   * locked first, so concurrent demotions and removals see each other's outcome.
   */
  private async guardingLastAdmin<T>(
    orgId: string,
    id: string,
    losesAdmin: (member: Member) => boolean,
    change: (tx: DatabaseClient, member: Member) => Promise<T>,
  ): Promise<AdminGuarded<T>> {
    return this.db.$transaction(async (tx) => {
      const admins = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM members WHERE org_id = ${orgId}::uuid AND role = 'admin' ORDER BY id FOR UPDATE`;
      const member = await tx.member.findFirst({ where: { orgId, id } });
      if (!member) return { kind: 'not_found' as const };
      if (losesAdmin(member) && admins.length === 1 && admins[0]!.id === member.id) return { kind: 'last_admin' as const };
      return { kind: 'done' as const, value: await change(tx, member) };
    });
  }

  /**
   * Changes the member with its audit events. A role change (`roleScopes`: the scopes of the new
   * role) revokes, in the same transaction, the member's keys holding any other scope.
   */
  update(
    orgId: string,
    id: string,
    changes: MemberChanges,
    roleScopes: readonly Scope[] | null,
    events: (before: Member, revokedKeys: ApiKey[]) => AuditEventDraft[],
  ): Promise<AdminGuarded<Member>> {
    return this.guardingLastAdmin(
      orgId,
      id,
      (member) => member.role === 'admin' && changes.role !== undefined && changes.role !== 'admin',
      async (tx, member) => {
        const updated = await tx.member.update({ where: { id }, data: changes });
        const revoked = roleScopes ? await revokeMemberKeys(tx, orgId, id, roleScopes, new Date()) : [];
        await appendAuditEvents(tx, orgId, events(member, revoked));
        return updated;
      },
    );
  }

  /**
   * Deletes the member; its sessions and invites go with it (cascade), and every key it owns is
   * revoked in the same transaction, so access ends at once.
   */
  remove(orgId: string, id: string, events: (member: Member, revokedKeys: ApiKey[]) => AuditEventDraft[]): Promise<AdminGuarded<Member>> {
    return this.guardingLastAdmin(
      orgId,
      id,
      (member) => member.role === 'admin',
      async (tx, member) => {
        await tx.member.delete({ where: { id } });
        const revoked = await revokeMemberKeys(tx, orgId, id, null, new Date());
        await appendAuditEvents(tx, orgId, events(member, revoked));
        return member;
      },
    );
  }

  /** A member's own settings: no audit event, nothing another member relies on. */
  async updateSelf(id: string, changes: Pick<Prisma.MemberUpdateInput, 'emailNotifications'>): Promise<Member> {
    return this.db.member.update({ where: { id }, data: changes });
  }

  /** Adds an invite; a mail sent again for the same event replaces the token it sent before. */
  async addInvite(memberId: string, invite: { tokenHash: Uint8Array<ArrayBuffer>; expiresAt: Date; sentForEvent?: string }): Promise<void> {
    if (!invite.sentForEvent) {
      await this.db.memberInvite.create({ data: { memberId, ...invite } });
      return;
    }
    await this.db.memberInvite.upsert({
      where: { sentForEvent: invite.sentForEvent },
      create: { memberId, ...invite },
      update: { tokenHash: invite.tokenHash, expiresAt: invite.expiresAt },
    });
  }

  /**
   * Uses an invite: sets the password (and name), consumes every invite of the member and opens
   * a session, in one transaction. Null when the token is unknown, used or expired; the
   * conditional delete decides two concurrent uses of one token.
   */
  acceptInvite(
    tokenHash: Uint8Array<ArrayBuffer>,
    now: Date,
    changes: { passwordHash: string; name?: string },
    session: NewSession,
  ): Promise<Member | null> {
    return this.db.$transaction(async (tx) => {
      const [invite] = await tx.$queryRaw<{ memberId: string }[]>`
        DELETE FROM member_invites WHERE token_hash = ${Buffer.from(tokenHash)} AND expires_at > ${now}
        RETURNING member_id AS "memberId"`;
      if (!invite) return null;
      await tx.memberInvite.deleteMany({ where: { memberId: invite.memberId } });
      const member = await tx.member.update({ where: { id: invite.memberId }, data: { ...changes, lastSignInAt: now } });
      await tx.session.create({ data: { ...session, memberId: member.id } });
      return member;
    });
  }

  async openSession(memberId: string, session: NewSession, now: Date): Promise<Member> {
    return this.db.$transaction(async (tx) => {
      await tx.session.create({ data: { ...session, memberId } });
      return tx.member.update({ where: { id: memberId }, data: { lastSignInAt: now } });
    });
  }

  /** The live session of a cookie: unexpired, used within `idleMs`, its member still there. */
  async findSession(tokenHash: Uint8Array<ArrayBuffer>, idleMs: number): Promise<SessionGrant | null> {
    const [row] = await this.sql.query<SessionGrant>(
      'session-grant',
      `SELECT s.id AS "sessionId", s.csrf_token AS "csrfToken", s.last_used_at AS "lastUsedAt",
              m.id AS "memberId", m.email, m.role, m.org_id AS "orgId", o.plan
       FROM sessions s JOIN members m ON m.id = s.member_id JOIN organizations o ON o.id = m.org_id
       WHERE s.token_hash = $1 AND s.expires_at > clock_timestamp()
         AND s.last_used_at > clock_timestamp() - $2 * interval '1 millisecond'`,
      [Buffer.from(tokenHash), idleMs],
    );
    return row ?? null;
  }

  async touchSession(sessionId: string): Promise<void> {
    await this.sql.query('session-touch', 'UPDATE sessions SET last_used_at = clock_timestamp() WHERE id = $1', [sessionId]);
  }

  async endSession(sessionId: string): Promise<void> {
    await this.db.session.deleteMany({ where: { id: sessionId } });
  }

  /** Failed sign-ins for the email within the window, oldest first (their times bound the wait). */
  recentFailures(emailKey: string, windowMs: number): Promise<{ failedAt: Date }[]> {
    return this.sql.query(
      'sign-in-failures',
      `SELECT failed_at AS "failedAt" FROM sign_in_failures
       WHERE email_key = $1 AND failed_at > clock_timestamp() - $2 * interval '1 millisecond' ORDER BY failed_at`,
      [emailKey, windowMs],
    );
  }

  async recordFailure(emailKey: string): Promise<void> {
    await this.sql.query('sign-in-failure', 'INSERT INTO sign_in_failures (email_key) VALUES ($1)', [emailKey]);
  }

  /** The member a Slack identity is linked to (never matched by email; see docs/members-and-channels.md). */
  findBySlackIdentity(orgId: string, teamId: string, userId: string): Promise<Member | null> {
    return this.db.member.findFirst({ where: { orgId, slackTeamId: teamId, slackUserId: userId } });
  }

  async addSlackLinkToken(token: {
    tokenHash: Uint8Array<ArrayBuffer>;
    orgId: string;
    teamId: string;
    userId: string;
    expiresAt: Date;
  }): Promise<void> {
    await this.db.slackLinkToken.create({ data: token });
  }

  /**
   * Links the Slack identity of an unused, unexpired link token of the member's organization to
   * the member, consuming the token, with its audit event. 'taken' (nothing changes, the token
   * stays usable) when another member holds that identity.
   */
  linkSlackIdentity(
    orgId: string,
    memberId: string,
    tokenHash: Uint8Array<ArrayBuffer>,
    event: (member: Member) => AuditEventDraft,
  ): Promise<'linked' | 'gone' | 'taken'> {
    return this.db
      .$transaction(async (tx) => {
        const [identity] = await tx.$queryRaw<{ teamId: string; userId: string }[]>`
          DELETE FROM slack_link_tokens WHERE token_hash = ${Buffer.from(tokenHash)} AND org_id = ${orgId}::uuid AND expires_at > now()
          RETURNING team_id AS "teamId", user_id AS "userId"`;
        if (!identity) return 'gone' as const;
        const holder = await tx.member.findFirst({ where: { orgId, slackTeamId: identity.teamId, slackUserId: identity.userId } });
        if (holder && holder.id !== memberId) throw new SlackIdentityTaken();
        const member = await tx.member.update({
          where: { id: memberId },
          data: { slackTeamId: identity.teamId, slackUserId: identity.userId },
        });
        await appendAuditEvents(tx, orgId, [event(member)]);
        return 'linked' as const;
      })
      .catch((error: unknown) => {
        if (error instanceof SlackIdentityTaken) return 'taken' as const;
        throw error;
      });
  }

  /** Maintenance: forgets sessions past their end, invites and Slack link tokens past their expiry, failures past the window. */
  async prune(idleMs: number, failureWindowMs: number): Promise<number> {
    const [sessions, invites, failures, slackLinks] = await Promise.all([
      this.db.$executeRaw`DELETE FROM sessions WHERE expires_at < now() OR last_used_at < now() - ${idleMs} * interval '1 millisecond'`,
      this.db.$executeRaw`DELETE FROM member_invites WHERE expires_at < now()`,
      this.db.$executeRaw`DELETE FROM sign_in_failures WHERE failed_at < now() - ${failureWindowMs} * interval '1 millisecond'`,
      this.db.$executeRaw`DELETE FROM slack_link_tokens WHERE expires_at < now()`,
    ]);
    return sessions + invites + failures + slackLinks;
  }
}

export interface NewSession {
  tokenHash: Uint8Array<ArrayBuffer>;
  csrfToken: string;
  expiresAt: Date;
}

/** Rolls back the consumption of a Slack link token whose identity belongs to another member. */
class SlackIdentityTaken extends Error {}
