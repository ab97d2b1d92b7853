import { randomBytes } from 'node:crypto';
import type { DataLayer } from '../../data/database.js';
import {
  ConflictError,
  ForbiddenError,
  GoneError,
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
} from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { digestToken, newSecretToken } from '../../lib/secret-tokens.js';
import type { Actor, AuditEventDraft, AuditEventType } from '../audit/audit-events.js';
import type { OutboxSignal } from '../outbox/outbox-signal.js';
import { keyEvent } from '../orgs/api-keys.js';
import type { ApiKey } from '../orgs/org-store.js';
import { ROLE_SCOPES, type MemberRole, type Tenant } from '../orgs/tenant.js';
import {
  MAX_DELEGATION_DAYS,
  type DelegationInput,
  type InviteAcceptInput,
  type InvitePreview,
  type MemberCreateInput,
  type MemberUpdateInput,
  type MemberView,
  type SessionView,
  type SignInInput,
} from './member-schemas.js';
import type { SlackLinkPreview } from '../slack/slack-schemas.js';
import { MemberStore, type AdminGuarded, type Member, type MemberChanges, type NewSession } from './member-store.js';
import { assertRoomToVerify, hashPassword, verifyPassword } from './passwords.js';

const HOUR_MS = 3_600_000;

/** Invites last 7 days; sessions end after 12 idle hours and 7 days at most (see docs/members-and-channels.md). */
export const INVITE_TTL_MS = 7 * 24 * HOUR_MS;
export const SESSION_IDLE_MS = 12 * HOUR_MS;
export const SESSION_MAX_MS = 7 * 24 * HOUR_MS;
/** Ten failed sign-ins for one email within fifteen minutes close it until the window passes. */
export const SIGN_IN_FAILURE_LIMIT = 10;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
/** A link sent to an unlinked Slack or Teams user works once, for 15 minutes (see docs/members-and-channels.md). */
export const SLACK_LINK_TTL_MS = 15 * 60_000;
/** Last use is written at most this often, not on every request. */
const SESSION_TOUCH_INTERVAL_MS = 60_000;

export interface MemberOptions {
  /** Where links point (PUBLIC_URL): the invite URL is `<publicUrl>/console/invite/<token>`. */
  publicUrl: string;
}

/** A new session: the cookie value (shown to the browser only) and what the API answers. */
export interface SignedIn extends SessionView {
  sessionToken: string;
  expiresAt: Date;
}

/** Members of an organization, their invites and sessions (see docs/members-and-channels.md). */
export class MemberService {
  private readonly store: MemberStore;

  constructor(
    data: Pick<DataLayer, 'db' | 'sql'>,
    private readonly afterCommit: { outboxSignal: Pick<OutboxSignal, 'notify'> },
    private readonly options: MemberOptions,
  ) {
    this.store = new MemberStore(data.db, data.sql);
  }

  async list(tenant: Tenant): Promise<MemberView[]> {
    return (await this.store.list(tenant.orgId)).map(toMemberView);
  }

  async get(orgId: string, id: string): Promise<MemberView> {
    return toMemberView(await this.require(orgId, id));
  }

  /**
   * Creates a member and its invite; the invite mail follows from the member.created event. The
   * caller must hold every scope of the role it grants.
   */
  async create(
    tenant: Pick<Tenant, 'orgId' | 'actor' | 'scopes'>,
    input: MemberCreateInput,
  ): Promise<{ member: MemberView; inviteUrl: string }> {
    const refusal = grantRefusal(tenant, input.role);
    if (refusal) throw refusal;
    const token = newSecretToken();
    const member = await this.store.create(
      { orgId: tenant.orgId, email: input.email, emailKey: emailKey(input.email), name: input.name ?? null, role: input.role },
      { tokenHash: digestToken(token), expiresAt: new Date(Date.now() + INVITE_TTL_MS) },
      (created) => memberEvent('member.created', tenant.actor, created, { role: created.role }),
    );
    if (!member) throw new ConflictError(`A member with the email '${input.email}' already exists in this organization.`);
    this.afterCommit.outboxSignal.notify();
    return { member: toMemberView(member), inviteUrl: this.inviteUrl(token) };
  }

  /**
   * Changes a member. A new role must be one the caller holds every scope of (another
   * organization's member is not found first), and it revokes the member's keys holding a scope
   * the role lacks.
   */
  async update(tenant: Tenant, id: string, patch: MemberUpdateInput): Promise<MemberView> {
    const refusal = patch.role !== undefined ? grantRefusal(tenant, patch.role) : null;
    if (refusal) {
      await this.require(tenant.orgId, id);
      throw refusal;
    }
    const changes: MemberChanges = {
      ...(patch.role !== undefined ? { role: patch.role } : {}),
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.slack !== undefined ? { slackTeamId: patch.slack?.teamId ?? null, slackUserId: patch.slack?.userId ?? null } : {}),
      ...(patch.teams !== undefined ? { teamsAadObjectId: patch.teams?.aadObjectId ?? null } : {}),
    };
    const roleScopes = patch.role !== undefined ? [...ROLE_SCOPES[patch.role]] : null;
    const outcome = await this.store.update(tenant.orgId, id, changes, roleScopes, (before, revokedKeys) => [
      memberEvent('member.updated', tenant.actor, before, {
        ...(patch.role !== undefined ? { role: patch.role, previousRole: before.role } : {}),
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.slack !== undefined ? { slackLinked: patch.slack !== null } : {}),
        ...(patch.teams !== undefined ? { teamsLinked: patch.teams !== null } : {}),
      }),
      ...keysRevokedWith('member.updated', tenant, before, revokedKeys),
    ]);
    if (outcome.kind === 'identity_taken') throw identityTaken(patch.teams !== undefined && patch.slack === undefined ? 'Teams' : 'Slack');
    const member = this.settled(outcome, id, 'demote');
    this.afterCommit.outboxSignal.notify();
    return toMemberView(member);
  }

  /** Removes a member; every session and key of theirs ends with them. */
  async remove(tenant: Tenant, id: string): Promise<void> {
    const outcome = await this.store.remove(tenant.orgId, id, (member, revokedKeys) => [
      memberEvent('member.removed', tenant.actor, member, { role: member.role }),
      ...keysRevokedWith('member.removed', tenant, member, revokedKeys),
    ]);
    this.settled(outcome, id, 'remove');
    this.afterCommit.outboxSignal.notify();
  }

  /**
   * Names who decides in a member's place until `endsAt` (see docs/members-and-channels.md#delegation),
   * or, with null, no one. `memberId` null: the signed-in member's own. The delegate votes as
   * themself, only on requests the member may decide and did not ask for.
   */
  async setDelegation(tenant: Tenant, memberId: string | null, input: DelegationInput | null): Promise<MemberView> {
    const id = memberId ?? memberIdOf(tenant);
    const now = Date.now();
    const delegation = input && {
      delegateId: input.delegateId,
      startsAt: input.startsAt ? new Date(input.startsAt) : null,
      endsAt: new Date(input.endsAt),
    };
    if (delegation) {
      const from = Math.max(now, delegation.startsAt?.getTime() ?? now);
      if (delegation.endsAt.getTime() <= from) throw delegationRefused('endsAt', 'endsAt must be in the future and after startsAt');
      if (delegation.endsAt.getTime() > now + MAX_DELEGATION_DAYS * 86_400_000) {
        throw delegationRefused('endsAt', `endsAt must be at most ${MAX_DELEGATION_DAYS} days from now`);
      }
    }
    const member = await this.store.setDelegation(tenant.orgId, id, delegation, (before, delegate) => {
      if (delegation) {
        if (before.role === 'viewer') throw delegationRefused('delegateId', 'A viewer decides nothing, so has nothing to delegate.');
        if (!delegate) throw delegationRefused('delegateId', 'delegateId is not a member of this organization.');
        if (delegate.id === before.id) throw delegationRefused('delegateId', 'A member cannot be their own delegate.');
        if (delegate.role === 'viewer') throw delegationRefused('delegateId', 'A viewer cannot decide, so cannot be a delegate.');
      }
      const recorded = delegation && {
        delegateId: delegation.delegateId,
        delegateEmail: delegate!.email,
        startsAt: delegation.startsAt?.toISOString() ?? null,
        endsAt: delegation.endsAt.toISOString(),
      };
      return [memberEvent('member.updated', tenant.actor, before, { delegation: recorded })];
    });
    if (!member) throw memberNotFound(id);
    this.afterCommit.outboxSignal.notify();
    return toMemberView(member);
  }

  /** A member's own settings, through their session. */
  async updateSelf(tenant: Tenant, changes: { emailNotifications: boolean }): Promise<MemberView> {
    return toMemberView(await this.store.updateSelf(memberIdOf(tenant), changes));
  }

  /**
   * A fresh invite for the mail that announces a member (at least once: a retried mail replaces
   * the token it sent before, so one mail's link works at a time). Null when the member is gone or
   * has set a password already: an invite is mailed only to someone who has none.
   */
  async inviteForMail(orgId: string, memberId: string, eventId: string): Promise<{ member: Member; inviteUrl: string } | null> {
    const member = await this.store.find(orgId, memberId);
    if (!member || member.passwordHash !== null) return null;
    const token = newSecretToken();
    const added = await this.store.mailedInvite(member.id, {
      tokenHash: digestToken(token),
      expiresAt: new Date(Date.now() + INVITE_TTL_MS),
      sentForEvent: eventId,
    });
    return added ? { member, inviteUrl: this.inviteUrl(token) } : null;
  }

  /**
   * Sets the password of an invited member and signs them in. The token is looked at before the
   * password is hashed, so made-up tokens cost no hashing; the acceptance itself is decided in one
   * transaction (MemberStore.acceptInvite).
   */
  async acceptInvite(input: InviteAcceptInput): Promise<SignedIn> {
    const tokenHash = digestToken(input.token);
    if (!(await this.store.invitePreview(tokenHash, new Date()))) throw inviteGone();
    const passwordHash = await hashPassword(input.password);
    const now = new Date();
    const session = newSession(now);
    const member = await this.store.acceptInvite(
      tokenHash,
      now,
      { passwordHash, ...(input.name ? { name: input.name } : {}) },
      session.record,
    );
    if (!member) throw inviteGone();
    return session.signedIn(member);
  }

  /** What an invite joins (organization, role, email), without using it up. */
  async previewInvite(token: string): Promise<InvitePreview> {
    const preview = await this.store.invitePreview(digestToken(token), new Date());
    if (!preview) throw inviteGone();
    return preview;
  }

  /**
   * Signs in by email and password. The attempt is counted as a failure for the email before the
   * password is checked, so that ten concurrent guesses use up the email's ten as surely as ten in
   * a row; it is taken back when the password is right or could not be checked (503: too many
   * sign-ins wait for hashing, which is asked before anything else as well). An unknown
   * email and a wrong password cost the same scrypt work and get the same 401; ten failures for
   * one email in fifteen minutes lock it (429) until the oldest of them leaves the window,
   * whatever the password.
   */
  async signIn(input: SignInInput): Promise<SignedIn> {
    assertRoomToVerify();
    const key = emailKey(input.email);
    const attempt = await this.store.claimSignInAttempt(key, SIGN_IN_FAILURE_LIMIT, SIGN_IN_WINDOW_MS);
    if (attempt.kind === 'locked') {
      throw new RateLimitedError(
        'Too many failed sign-ins for this email; try again later.',
        (attempt.reopensAt.getTime() - Date.now()) / 1000,
      );
    }
    let matching: Member[];
    try {
      const candidates = await this.store.findSignable(key, input.orgId);
      const verdicts = await Promise.all(
        (candidates.length > 0 ? candidates : [null]).map((member) => verifyPassword(input.password, member?.passwordHash ?? null)),
      );
      matching = candidates.filter((_, index) => verdicts[index]);
    } catch (error) {
      await this.store.forgetSignInAttempt(attempt.attemptId);
      throw error;
    }
    if (matching.length === 0) throw new UnauthorizedError('The email or the password is wrong.');
    await this.store.forgetSignInAttempt(attempt.attemptId);
    if (matching.length > 1) {
      throw new ValidationError([
        { path: 'orgId', message: 'This email is a member of several organizations: name the one to sign in to.' },
      ]);
    }
    const now = new Date();
    const session = newSession(now);
    return session.signedIn(await this.store.openSession(matching[0]!.id, session.record, now));
  }

  /** The tenant a session cookie acts as, or null: the member's role is read now, so a demotion applies at once. */
  async authenticateSession(sessionToken: string): Promise<Tenant | null> {
    if (sessionToken.length !== 43) return null;
    const grant = await this.store.findSession(digestToken(sessionToken), SESSION_IDLE_MS);
    if (!grant) return null;
    if (Date.now() - grant.lastUsedAt.getTime() > SESSION_TOUCH_INTERVAL_MS) await this.store.touchSession(grant.sessionId);
    return {
      orgId: grant.orgId,
      plan: grant.plan,
      scopes: ROLE_SCOPES[grant.role],
      actor: { type: 'user', id: grant.memberId, email: grant.email },
      principal: {
        type: 'session',
        sessionId: grant.sessionId,
        memberId: grant.memberId,
        email: grant.email,
        role: grant.role,
        csrfToken: grant.csrfToken,
      },
    };
  }

  async sessionView(tenant: Tenant): Promise<SessionView> {
    if (tenant.principal.type !== 'session') throw new UnauthorizedError('No console session: sign in first.');
    return { member: await this.get(tenant.orgId, tenant.principal.memberId), csrfToken: tenant.principal.csrfToken };
  }

  async signOut(tenant: Tenant): Promise<void> {
    if (tenant.principal.type === 'session') await this.store.endSession(tenant.principal.sessionId);
  }

  /** The member linked to a Slack identity, or null: nobody is matched by email. */
  findBySlackIdentity(orgId: string, teamId: string, userId: string): Promise<Member | null> {
    return this.store.findBySlackIdentity(orgId, teamId, userId);
  }

  /** A single-use console link (15 minutes) that links this Slack identity to whoever opens it signed in. */
  async issueSlackLink(orgId: string, teamId: string, userId: string): Promise<string> {
    const token = newSecretToken();
    await this.store.addSlackLinkToken({
      tokenHash: digestToken(token),
      orgId,
      teamId,
      userId,
      expiresAt: new Date(Date.now() + SLACK_LINK_TTL_MS),
    });
    return `${this.options.publicUrl}/console/link-slack/${token}`;
  }

  /**
   * What a link token would link, for the console to ask before it does (POST
   * /v1/session/slack-link/preview): nothing is used up. The same refusals as linking.
   */
  async previewSlackLink(tenant: Tenant, token: string): Promise<SlackLinkPreview> {
    const memberId = memberIdOf(tenant);
    const found = await this.store.findSlackLinkToken(tenant.orgId, digestToken(token));
    if (!found) throw slackLinkGone();
    if (found.holderId !== null && found.holderId !== memberId) throw identityTaken('Slack');
    return {
      teamId: found.teamId,
      userId: found.userId,
      expiresAt: found.expiresAt.toISOString(),
      linkedToYou: found.holderId === memberId,
    };
  }

  /** Links the Slack identity of a link token to the signed-in member (POST /v1/session/slack-link). */
  async linkSlack(tenant: Tenant, token: string): Promise<void> {
    const outcome = await this.store.linkSlackIdentity(tenant.orgId, memberIdOf(tenant), digestToken(token), (member) =>
      memberEvent('member.updated', tenant.actor, member, { slackLinked: true }),
    );
    if (outcome === 'gone') throw slackLinkGone();
    if (outcome === 'taken') throw identityTaken('Slack');
    this.afterCommit.outboxSignal.notify();
  }

  /** The member linked to an Entra object id (a Teams user), or null: nobody is matched by email. */
  findByTeamsIdentity(orgId: string, aadObjectId: string): Promise<Member | null> {
    return this.store.findByTeamsIdentity(orgId, aadObjectId);
  }

  /** A single-use console link (15 minutes) that links this Entra object id to whoever opens it signed in. */
  async issueTeamsLink(orgId: string, aadObjectId: string): Promise<string> {
    const token = newSecretToken();
    await this.store.addTeamsLinkToken({
      tokenHash: digestToken(token),
      orgId,
      aadObjectId,
      expiresAt: new Date(Date.now() + SLACK_LINK_TTL_MS),
    });
    return `${this.options.publicUrl}/console/link-teams/${token}`;
  }

  /** Links the Teams identity of a link token to the signed-in member (POST /v1/session/teams-link). */
  async linkTeams(tenant: Tenant, token: string): Promise<void> {
    const outcome = await this.store.linkTeamsIdentity(tenant.orgId, memberIdOf(tenant), digestToken(token), (member) =>
      memberEvent('member.updated', tenant.actor, member, { teamsLinked: true }),
    );
    if (outcome === 'gone')
      throw new GoneError('This Teams link is unknown, used or expired. Press a button on the card in Teams again for a new one.');
    if (outcome === 'taken') throw identityTaken('Teams');
    this.afterCommit.outboxSignal.notify();
  }

  /** Maintenance: expired sessions and invites, and failures older than the window. */
  prune(): Promise<number> {
    return this.store.prune(SESSION_IDLE_MS, SIGN_IN_WINDOW_MS);
  }

  private inviteUrl(token: string): string {
    return `${this.options.publicUrl}/console/invite/${token}`;
  }

  private async require(orgId: string, id: string): Promise<Member> {
    const member = isUuid(id) ? await this.store.find(orgId, id) : null;
    if (!member) throw memberNotFound(id);
    return member;
  }

  private settled<T>(outcome: AdminGuarded<T>, id: string, change: 'demote' | 'remove'): T {
    if (outcome.kind === 'not_found') throw memberNotFound(id);
    if (outcome.kind === 'last_admin') {
      throw new ConflictError(`This is the organization's last admin: make another member admin before you ${change} this one.`);
    }
    return outcome.value;
  }
}

export function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

function memberIdOf(tenant: Tenant): string {
  if (tenant.principal.type !== 'session')
    throw new UnauthorizedError('Only a member signed in to the console can change their own settings.');
  return tenant.principal.memberId;
}

function slackLinkGone(): GoneError {
  return new GoneError('This Slack link is unknown, used or expired. Press a button in Slack again for a new one.');
}

function inviteGone(): GoneError {
  return new GoneError('This invite is unknown, used or expired. Ask an admin of your organization for a new one.');
}

function identityTaken(service: 'Slack' | 'Teams'): ConflictError {
  return new ConflictError(`This ${service} account is linked to another member of the organization; an admin can clear it there first.`);
}

function memberNotFound(id: string): NotFoundError {
  return new NotFoundError(`No member with id '${id}' exists.`);
}

function newSession(now: Date): { record: NewSession; signedIn(member: Member): SignedIn } {
  const sessionToken = newSecretToken();
  const csrfToken = randomBytes(24).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_MAX_MS);
  return {
    record: { tokenHash: digestToken(sessionToken), csrfToken, expiresAt },
    signedIn: (member) => ({ member: toMemberView(member), csrfToken, sessionToken, expiresAt }),
  };
}

/**
 * Why the caller may not grant a role, or null: granting needs every scope of the role, as making
 * a key does (docs/members-and-channels.md#principals).
 */
function grantRefusal(tenant: Pick<Tenant, 'scopes'>, role: MemberRole): ForbiddenError | null {
  const lacking = [...ROLE_SCOPES[role]].filter((scope) => !tenant.scopes.has(scope));
  if (lacking.length === 0) return null;
  return new ForbiddenError(`You cannot grant the ${role} role without holding every scope of it; you lack: ${lacking.join(', ')}.`);
}

/** The key.revoked events of the keys a member's removal or role change ended. */
function keysRevokedWith(reason: 'member.removed' | 'member.updated', tenant: Tenant, member: Member, keys: ApiKey[]): AuditEventDraft[] {
  return keys.map((key) => keyEvent('key.revoked', tenant.actor, key, { memberId: member.id, reason }));
}

function memberEvent(
  type: AuditEventType,
  actor: Actor,
  member: Pick<Member, 'id' | 'email'>,
  changes: Record<string, unknown>,
): AuditEventDraft {
  return { type, actor, createdAt: new Date(), data: { memberId: member.id, email: member.email, ...changes } };
}

export function toMemberView(member: Member): MemberView {
  return {
    id: member.id,
    email: member.email,
    name: member.name,
    role: member.role,
    createdAt: member.createdAt.toISOString(),
    lastSignInAt: member.lastSignInAt?.toISOString() ?? null,
    slackLinked: member.slackUserId !== null,
    teamsLinked: member.teamsAadObjectId !== null,
    emailNotifications: member.emailNotifications,
    delegation:
      member.delegateId !== null && member.delegationEndsAt !== null && member.delegationEndsAt.getTime() > Date.now()
        ? {
            delegateId: member.delegateId,
            startsAt: member.delegationStartsAt?.toISOString() ?? null,
            endsAt: member.delegationEndsAt.toISOString(),
          }
        : null,
  };
}

function delegationRefused(path: 'delegateId' | 'endsAt', message: string): ValidationError {
  return new ValidationError([{ path, message }]);
}
