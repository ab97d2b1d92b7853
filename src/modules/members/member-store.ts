import { randomUUID } from 'node:crypto';
import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Database, DatabaseClient, Sql } from '../../data/database.js';
import { isUniqueViolation } from '../../data/database-errors.js';
import {
  Prisma,
  type Member,
  type MemberRole,
  type Plan,
  type SlackLinkToken,
  type TeamsLinkToken,
} from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import { appendAuditEvents, auditEventsArgument } from '../audit/audit-store.js';
import { ORGANIZATION_COLUMNS } from '../orgs/org-columns.js';
import { revokeMemberKeys, type ApiKey } from '../orgs/org-store.js';
import type { Scope } from '../orgs/tenant.js';
import { SLACK_LINK_TOKEN_COLUMNS } from '../slack/slack-columns.js';
import { TEAMS_LINK_TOKEN_COLUMNS } from '../teams/teams-columns.js';
import { MEMBER_COLUMNS, SESSION_COLUMNS } from './member-columns.js';
import type { InvitePreview } from './member-schemas.js';

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

const SESSION_GRANT_COLUMNS = selectList({
  sessionId: qualified('s', SESSION_COLUMNS).id,
  ...pickColumns(qualified('s', SESSION_COLUMNS), ['csrfToken', 'lastUsedAt']),
  memberId: qualified('m', MEMBER_COLUMNS).id,
  ...pickColumns(qualified('m', MEMBER_COLUMNS), ['email', 'role', 'orgId']),
  ...pickColumns(qualified('o', ORGANIZATION_COLUMNS), ['plan']),
} satisfies ColumnMap<SessionGrant>);

const INVITE_PREVIEW_COLUMNS = selectList({
  organization: qualified('o', ORGANIZATION_COLUMNS).name,
  ...pickColumns(qualified('m', MEMBER_COLUMNS), ['role', 'email']),
} satisfies ColumnMap<InvitePreview>);

/** A row of ag_claim_sign_in_attempt: the attempt counted, or when the email may try again. */
interface SignInAttemptClaim {
  attemptId: string | null;
  reopensAt: Date | null;
}
export const SIGN_IN_ATTEMPT_COLUMNS = {
  attemptId: 'attempt_id',
  reopensAt: 'reopens_at',
} as const satisfies ColumnMap<SignInAttemptClaim>;

const MEMBER_SELECT = selectList(MEMBER_COLUMNS);
const MEMBER_ID = Prisma.raw(selectList(pickColumns(MEMBER_COLUMNS, ['id'])));
const MEMBER_ID_OF_M = Prisma.raw(selectList(pickColumns(qualified('m', MEMBER_COLUMNS), ['id'])));
/** A Slack link token's identity, and the member who holds that identity now (null when none does). */
type SlackLinkTokenFound = Pick<SlackLinkToken, 'teamId' | 'userId' | 'expiresAt'> & { holderId: string | null };
const SLACK_LINK_TOKEN_FOUND = Prisma.raw(
  selectList({
    ...pickColumns(qualified('t', SLACK_LINK_TOKEN_COLUMNS), ['teamId', 'userId', 'expiresAt']),
    holderId: `${qualified('m', MEMBER_COLUMNS).id}::text`,
  } satisfies ColumnMap<SlackLinkTokenFound>),
);
const SLACK_IDENTITY = Prisma.raw(selectList(pickColumns(SLACK_LINK_TOKEN_COLUMNS, ['teamId', 'userId'])));
const TEAMS_IDENTITY = Prisma.raw(selectList(pickColumns(TEAMS_LINK_TOKEN_COLUMNS, ['aadObjectId'])));

export type MemberChanges = Partial<
  Pick<Member, 'role' | 'name' | 'slackTeamId' | 'slackUserId' | 'teamsAadObjectId' | 'emailNotifications'>
>;

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
    event: (member: Pick<Member, 'id' | 'email' | 'role'>) => AuditEventDraft,
  ): Promise<Member | null> {
    // One statement on the pool, not Prisma's: `member:create` is a CLI command, and the first
    // Prisma query of a process loads its query compiler (see OrgStore). The id is made here, so
    // that the event is written by the same statement.
    const id = randomUUID();
    try {
      const [created] = await this.sql.query<Member>(
        'member-create',
        `WITH created AS (
           INSERT INTO members (${MEMBER_COLUMNS.id}, ${MEMBER_COLUMNS.orgId}, ${MEMBER_COLUMNS.email}, ${MEMBER_COLUMNS.emailKey}, ${MEMBER_COLUMNS.name}, ${MEMBER_COLUMNS.role})
           VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6::"MemberRole")
           RETURNING ${MEMBER_SELECT}),
         invite AS (INSERT INTO member_invites (token_hash, member_id, expires_at) SELECT $7::bytea, id, $8::timestamptz FROM created),
         audit AS (SELECT ag_append_audit_events($2::uuid, $9::jsonb) FROM created)
         SELECT created.* FROM created CROSS JOIN audit`,
        [
          id,
          member.orgId,
          member.email,
          member.emailKey,
          member.name,
          member.role,
          Buffer.from(invite.tokenHash),
          invite.expiresAt,
          auditEventsArgument([event({ id, email: member.email, role: member.role })]),
        ],
      );
      return created!;
    } catch (error) {
      if (isUniqueViolation(error)) return null;
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
      const admins = await tx.$queryRaw<Pick<Member, 'id'>[]>`
        SELECT ${MEMBER_ID} FROM members WHERE org_id = ${orgId}::uuid AND role = 'admin' ORDER BY id FOR UPDATE`;
      const member = await tx.member.findFirst({ where: { orgId, id } });
      if (!member) return { kind: 'not_found' as const };
      if (losesAdmin(member) && admins.length === 1 && admins[0]!.id === member.id) return { kind: 'last_admin' as const };
      return { kind: 'done' as const, value: await change(tx, member) };
    });
  }

  /**
   * Changes the member with its audit events. A role change (`roleScopes`: the scopes of the new
   * role) revokes, in the same transaction, the member's keys holding any other scope.
   * 'identity_taken' (nothing changes) when another member of the organization holds the Slack or Teams identity.
   */
  async update(
    orgId: string,
    id: string,
    changes: MemberChanges,
    roleScopes: readonly Scope[] | null,
    events: (before: Member, revokedKeys: ApiKey[]) => AuditEventDraft[],
  ): Promise<AdminGuarded<Member> | { kind: 'identity_taken' }> {
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
    ).catch((error: unknown) => {
      // The only unique constraints a change can break: (org, Slack team, Slack user) and (org, Entra object id).
      if (isUniqueViolation(error)) return { kind: 'identity_taken' as const };
      throw error;
    });
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

  /**
   * Sets or clears who decides in a member's place, with its audit event. `check` sees the member
   * and the delegate (another member of the organization, or null) under their row locks, so
   * neither's role changes under it; it throws to refuse. 'not_found' when the member is gone.
   */
  async setDelegation(
    orgId: string,
    id: string,
    delegation: { delegateId: string; startsAt: Date | null; endsAt: Date } | null,
    check: (member: Member, delegate: Member | null) => AuditEventDraft[],
  ): Promise<Member | null> {
    return this.db.$transaction(async (tx) => {
      const ids = delegation ? [id, delegation.delegateId] : [id];
      const locked = await tx.$queryRaw<Pick<Member, 'id'>[]>`
        SELECT ${MEMBER_ID} FROM members WHERE org_id = ${orgId}::uuid AND id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`;
      const member = locked.some((row) => row.id === id) ? await tx.member.findUniqueOrThrow({ where: { id } }) : null;
      if (!member) return null;
      const delegate =
        delegation && locked.some((row) => row.id === delegation.delegateId)
          ? await tx.member.findUniqueOrThrow({ where: { id: delegation.delegateId } })
          : null;
      const events = check(member, delegate);
      const updated = await tx.member.update({
        where: { id },
        data: {
          delegateId: delegation?.delegateId ?? null,
          delegationStartsAt: delegation?.startsAt ?? null,
          delegationEndsAt: delegation?.endsAt ?? null,
        },
      });
      await appendAuditEvents(tx, orgId, events);
      return updated;
    });
  }

  /** A member's own settings: no audit event, nothing another member relies on. */
  async updateSelf(id: string, changes: Pick<Prisma.MemberUpdateInput, 'emailNotifications'>): Promise<Member> {
    return this.db.member.update({ where: { id }, data: changes });
  }

  /**
   * The invite a mail carries, only while the member has no password: a mail sent again for the
   * same event replaces the token it sent before. False when the member is gone or has accepted an
   * invite already. The member's row is locked for share, so an acceptance either comes first (and
   * this sees its password) or waits, then deletes this invite with the member's others.
   */
  mailedInvite(memberId: string, invite: { tokenHash: Uint8Array<ArrayBuffer>; expiresAt: Date; sentForEvent: string }): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const [member] = await tx.$queryRaw<Pick<Member, 'id'>[]>`
        SELECT ${MEMBER_ID} FROM members WHERE id = ${memberId}::uuid AND password_hash IS NULL FOR SHARE`;
      if (!member) return false;
      await tx.memberInvite.upsert({
        where: { sentForEvent: invite.sentForEvent },
        create: { memberId, ...invite },
        update: { tokenHash: invite.tokenHash, expiresAt: invite.expiresAt },
      });
      return true;
    });
  }

  /**
   * The organization, role and email of an unexpired invite of a member who has no password yet
   * (nothing is changed); null otherwise.
   */
  async invitePreview(tokenHash: Uint8Array<ArrayBuffer>, now: Date): Promise<InvitePreview | null> {
    const [row] = await this.sql.query<InvitePreview>(
      'invite-preview',
      `SELECT ${INVITE_PREVIEW_COLUMNS} FROM member_invites i JOIN members m ON m.id = i.member_id JOIN organizations o ON o.id = m.org_id
       WHERE i.token_hash = $1 AND i.expires_at > $2 AND m.password_hash IS NULL`,
      [Buffer.from(tokenHash), now],
    );
    return row ?? null;
  }

  /**
   * Uses an invite: sets the password (and name), consumes every invite of the member and opens
   * a session, in one transaction. Null when the token is unknown, used or expired, or its member
   * has a password already (an invite never resets one). The token is spent and the member's row
   * locked first: of two uses of one token, or of two invites of one member, one wins; and an
   * invite mailed meanwhile is either deleted below or sees the password (mailedInvite).
   */
  acceptInvite(
    tokenHash: Uint8Array<ArrayBuffer>,
    now: Date,
    changes: { passwordHash: string; name?: string },
    session: NewSession,
  ): Promise<Member | null> {
    return this.db.$transaction(async (tx) => {
      const [invitee] = await tx.$queryRaw<Pick<Member, 'id'>[]>`
        WITH spent AS (
          DELETE FROM member_invites WHERE token_hash = ${Buffer.from(tokenHash)} AND expires_at > ${now} RETURNING member_id
        )
        SELECT ${MEMBER_ID_OF_M} FROM members m JOIN spent ON spent.member_id = m.id
        WHERE m.password_hash IS NULL FOR UPDATE OF m`;
      if (!invitee) return null;
      const member = await tx.member.update({ where: { id: invitee.id }, data: { ...changes, lastSignInAt: now } });
      await tx.memberInvite.deleteMany({ where: { memberId: invitee.id } });
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
      `SELECT ${SESSION_GRANT_COLUMNS}
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

  /**
   * Counts a sign-in attempt for the email as a failure before its password is checked, unless
   * `limit` failures within the window are counted already: then the time the oldest of those
   * leaves the window. Concurrent attempts for one email are counted one after the other
   * (prisma/functions/ag_claim_sign_in_attempt.sql), so none slips past the limit. An attempt that
   * was no failure after all is forgotten again (forgetSignInAttempt).
   */
  async claimSignInAttempt(
    emailKey: string,
    limit: number,
    windowMs: number,
  ): Promise<{ kind: 'claimed'; attemptId: string } | { kind: 'locked'; reopensAt: Date }> {
    const [row] = await this.sql.query<SignInAttemptClaim>(
      'sign-in-attempt-claim',
      `SELECT ${selectList(SIGN_IN_ATTEMPT_COLUMNS)}
       FROM ag_claim_sign_in_attempt($1, $2, $3 * interval '1 millisecond')`,
      [emailKey, limit, windowMs],
    );
    return row!.attemptId !== null ? { kind: 'claimed', attemptId: row!.attemptId } : { kind: 'locked', reopensAt: row!.reopensAt! };
  }

  /** A claimed attempt that was no failure after all: the right password, or never checked. */
  async forgetSignInAttempt(attemptId: string): Promise<void> {
    await this.sql.query('sign-in-attempt-forget', 'DELETE FROM sign_in_failures WHERE id = $1', [attemptId]);
  }

  /** The member a Slack identity is linked to (never matched by email; see docs/members-and-channels.md). */
  findBySlackIdentity(orgId: string, teamId: string, userId: string): Promise<Member | null> {
    return this.db.member.findFirst({ where: { orgId, slackTeamId: teamId, slackUserId: userId } });
  }

  /** The member linked to an Entra object id (a Teams user), or null. */
  findByTeamsIdentity(orgId: string, aadObjectId: string): Promise<Member | null> {
    return this.db.member.findFirst({ where: { orgId, teamsAadObjectId: aadObjectId } });
  }

  async addTeamsLinkToken(token: {
    tokenHash: Uint8Array<ArrayBuffer>;
    orgId: string;
    aadObjectId: string;
    expiresAt: Date;
  }): Promise<void> {
    await this.db.teamsLinkToken.create({ data: token });
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

  /** The Slack identity of an unused, unexpired link token of the organization, and who holds it now; the token stays as it is. */
  async findSlackLinkToken(orgId: string, tokenHash: Uint8Array<ArrayBuffer>): Promise<SlackLinkTokenFound | null> {
    const [found] = await this.db.$queryRaw<SlackLinkTokenFound[]>`
      SELECT ${SLACK_LINK_TOKEN_FOUND}
      FROM slack_link_tokens t
      LEFT JOIN members m ON m.org_id = t.org_id AND m.slack_team_id = t.team_id AND m.slack_user_id = t.user_id
      WHERE t.token_hash = ${Buffer.from(tokenHash)} AND t.org_id = ${orgId}::uuid AND t.expires_at > now()`;
    return found ?? null;
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
    return this.linkIdentity(orgId, memberId, event, async (tx) => {
      const [identity] = await tx.$queryRaw<Pick<SlackLinkToken, 'teamId' | 'userId'>[]>`
        DELETE FROM slack_link_tokens WHERE token_hash = ${Buffer.from(tokenHash)} AND org_id = ${orgId}::uuid AND expires_at > now()
        RETURNING ${SLACK_IDENTITY}`;
      return identity && { slackTeamId: identity.teamId, slackUserId: identity.userId };
    });
  }

  /** The same for a Teams link token and the Entra object id it carries. */
  linkTeamsIdentity(
    orgId: string,
    memberId: string,
    tokenHash: Uint8Array<ArrayBuffer>,
    event: (member: Member) => AuditEventDraft,
  ): Promise<'linked' | 'gone' | 'taken'> {
    return this.linkIdentity(orgId, memberId, event, async (tx) => {
      const [identity] = await tx.$queryRaw<Pick<TeamsLinkToken, 'aadObjectId'>[]>`
        DELETE FROM teams_link_tokens WHERE token_hash = ${Buffer.from(tokenHash)} AND org_id = ${orgId}::uuid AND expires_at > now()
        RETURNING ${TEAMS_IDENTITY}`;
      return identity && { teamsAadObjectId: identity.aadObjectId };
    });
  }

  /**
   * Spends a link token (`spend`: the identity it links, or nothing when it is unknown, used or
   * expired) and gives its identity to the member, in one transaction with the audit event.
   */
  private linkIdentity(
    orgId: string,
    memberId: string,
    event: (member: Member) => AuditEventDraft,
    spend: (tx: Prisma.TransactionClient) => Promise<MemberChanges | undefined>,
  ): Promise<'linked' | 'gone' | 'taken'> {
    return this.db
      .$transaction(async (tx) => {
        const identity = await spend(tx);
        if (!identity) return 'gone' as const;
        const holder = await tx.member.findFirst({ where: { orgId, ...identity } });
        if (holder && holder.id !== memberId) throw new IdentityTaken();
        const member = await tx.member.update({ where: { id: memberId }, data: identity });
        await appendAuditEvents(tx, orgId, [event(member)]);
        return 'linked' as const;
      })
      .catch((error: unknown) => {
        // Taken before this transaction looked, or by a concurrent one that committed first.
        if (error instanceof IdentityTaken || isUniqueViolation(error)) return 'taken' as const;
        throw error;
      });
  }

  /** Maintenance: forgets sessions past their end, invites and Slack and Teams link tokens past their expiry, failures past the window. */
  async prune(idleMs: number, failureWindowMs: number): Promise<number> {
    const [sessions, invites, failures, slackLinks, teamsLinks] = await Promise.all([
      this.db.$executeRaw`DELETE FROM sessions WHERE expires_at < now() OR last_used_at < now() - ${idleMs} * interval '1 millisecond'`,
      this.db.$executeRaw`DELETE FROM member_invites WHERE expires_at < now()`,
      this.db.$executeRaw`DELETE FROM sign_in_failures WHERE failed_at < now() - ${failureWindowMs} * interval '1 millisecond'`,
      this.db.$executeRaw`DELETE FROM slack_link_tokens WHERE expires_at < now()`,
      this.db.$executeRaw`DELETE FROM teams_link_tokens WHERE expires_at < now()`,
    ]);
    return sessions + invites + failures + slackLinks + teamsLinks;
  }
}

export interface NewSession {
  tokenHash: Uint8Array<ArrayBuffer>;
  csrfToken: string;
  expiresAt: Date;
}

/** Rolls back the consumption of a link token whose identity belongs to another member. */
class IdentityTaken extends Error {}
