import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import { Batcher } from '../../lib/batcher.js';
import { RetryLater } from '../../lib/job-retries.js';
import type { Logger } from '../../lib/logger.js';
import type { ApprovalNotification } from '../../generated/prisma/client.js';
import { oneApproval } from '../approvals/approval-store.js';
import { MEMBER_COLUMNS } from '../members/member-columns.js';
import type { MemberRole } from '../orgs/tenant.js';
import type { DecisionChannel } from '../policies/policy-schemas.js';

/**
 * The channels on which the service reaches reviewers itself: every decision channel but those a
 * decider comes to, and push, which tells a member's devices of a request decided in the console.
 */
export type NotificationChannel = Exclude<DecisionChannel, 'api' | 'console'> | 'push';

/** A member entitled to decide an approval through a channel, with what a notice needs. */
export interface EntitledMember {
  id: string;
  email: string;
  name: string | null;
  role: MemberRole;
  emailNotifications: boolean;
}

export interface NotificationKey {
  orgId: string;
  approvalId: string;
  /** Each revision of an approval is told about as a new request. */
  revision: number;
  channel: NotificationChannel;
  recipient: string;
  /** The reminder point (docs/members-and-channels.md#reminders) this notice is, when it is a reminder. */
  reminder?: number;
}

/** The notice of `approval`'s current revision to `recipient` through `channel`; with `reminder`, that reminder point's. */
export function noticeKey(
  orgId: string,
  approval: { id: string; revision: number },
  channel: NotificationChannel,
  recipient: string,
  reminder?: number,
): NotificationKey {
  return {
    orgId,
    approvalId: approval.id,
    revision: approval.revision,
    channel,
    recipient,
    ...(reminder === undefined ? {} : { reminder }),
  };
}

/**
 * The recipient as approval_notifications keeps it: a reminder is claimed apart from the notice of
 * the request itself and from every other reminder point, under the same recipient with its point.
 */
function storedRecipient({ recipient, reminder }: NotificationKey): string {
  return reminder === undefined ? recipient : `${recipient}#reminder-${reminder}`;
}

/** A Slack message posted for an approval: where chat.update finds it. */
export interface PostedSlackMessage {
  recipient: string;
  slackChannelId: string;
  slackTs: string;
  /** The approval's revision the message was posted for. */
  revision: number;
}

/** A Teams card posted for an approval: where its activity is replaced. */
export interface PostedTeamsActivity {
  recipient: string;
  teamsConversationId: string;
  teamsActivityId: string;
  /** The approval's revision the card was posted for. */
  revision: number;
}

/** Where a post landed, recorded once sent for the updates that follow. */
export type PostedMessage = { slackChannelId: string; slackTs: string } | { teamsConversationId: string; teamsActivityId: string };

/** Every column of `approval_notifications`; see ColumnMap for why a new one cannot be left out. */
export const NOTIFICATION_COLUMNS = {
  approvalId: 'approval_id',
  revision: 'revision',
  channel: 'channel',
  recipient: 'recipient',
  orgId: 'org_id',
  status: 'status',
  attempts: 'attempts',
  lastError: 'last_error',
  claimedAt: 'claimed_at',
  sentAt: 'sent_at',
  slackChannelId: 'slack_channel_id',
  slackTs: 'slack_ts',
  teamsConversationId: 'teams_conversation_id',
  teamsActivityId: 'teams_activity_id',
} as const satisfies ColumnMap<ApprovalNotification>;

const ENTITLED_MEMBER_COLUMNS = selectList(
  pickColumns(qualified('m', MEMBER_COLUMNS), ['id', 'email', 'name', 'role', 'emailNotifications']) satisfies ColumnMap<EntitledMember>,
);
const POSTED_SLACK_MESSAGE_COLUMNS = selectList(
  pickColumns(qualified('n', NOTIFICATION_COLUMNS), [
    'recipient',
    'slackChannelId',
    'slackTs',
    'revision',
  ]) satisfies ColumnMap<PostedSlackMessage>,
);

const POSTED_TEAMS_ACTIVITY_COLUMNS = selectList(
  pickColumns(qualified('n', NOTIFICATION_COLUMNS), [
    'recipient',
    'teamsConversationId',
    'teamsActivityId',
    'revision',
  ]) satisfies ColumnMap<PostedTeamsActivity>,
);

/** Per channel, the organizations of the array `param` names in which it can reach someone. */
const ORGS_REACHED_THROUGH: Record<NotificationChannel, (param: string) => string> = {
  email: (param) => `SELECT DISTINCT org_id AS "orgId" FROM members WHERE org_id = ANY (${param}::uuid[]) AND email_notifications`,
  slack: (param) => `SELECT org_id AS "orgId" FROM slack_integrations WHERE org_id = ANY (${param}::uuid[])`,
  teams: (param) => `SELECT org_id AS "orgId" FROM teams_integrations WHERE org_id = ANY (${param}::uuid[])`,
  push: (param) => `SELECT DISTINCT org_id AS "orgId" FROM push_subscriptions WHERE org_id = ANY (${param}::uuid[])`,
};

interface ReachAsk {
  channel: NotificationChannel;
  orgIds: readonly string[];
}

/**
 * The asks of one turn in one statement, a branch for each channel asked ($1 the organizations
 * asked of the first, and so on), each row naming its channel; channels nobody asked are not read.
 */
async function orgsReached(sql: Sql, asks: ReachAsk[]): Promise<ReadonlySet<string>[]> {
  const channels = [...new Set(asks.map((ask) => ask.channel))].sort();
  const rows = await sql.query<{ channel: NotificationChannel; orgId: string }>(
    `orgs-reached-through-${channels.join('-')}`,
    channels
      .map((channel, i) => `SELECT '${channel}' AS channel, "orgId" FROM (${ORGS_REACHED_THROUGH[channel](`$${i + 1}`)}) reached`)
      .join(' UNION ALL '),
    channels.map((channel) => [...new Set(asks.filter((ask) => ask.channel === channel).flatMap((ask) => ask.orgIds))]),
  );
  const reached = new Set(rows.map((row) => `${row.channel}/${row.orgId}`));
  return asks.map(({ channel, orgIds }) => new Set(orgIds.filter((orgId) => reached.has(`${channel}/${orgId}`))));
}

/**
 * approval_notifications: who was told about which approval on which channel. A notice is
 * claimed (a committed row) before it is sent, so that no second sender, retry or worker can send
 * it again; see docs/members-and-channels.md for what that guarantees around a crash.
 */
export class NotificationStore {
  /**
   * The consumers of one relayed batch ask in the same turn (mail, Slack, Teams and push of a new
   * request; Slack and Teams of a settled one): one round trip for all of them, where a pass at
   * low load relays a single event and paid one for each.
   */
  private readonly reached = new Batcher<ReachAsk, ReadonlySet<string>>((asks) => orgsReached(this.sql, asks));

  constructor(private readonly sql: Sql) {}

  /**
   * Of these organizations, those where `channel` can reach someone at all: a member taking email
   * notifications, a Slack workspace or Teams bot connected, a member's device subscribed to push.
   */
  orgsReachedThrough(channel: NotificationChannel, orgIds: readonly string[]): Promise<ReadonlySet<string>> {
    return this.reached.add({ channel, orgIds });
  }

  /**
   * The organization's members entitled to decide the approval through `channel` while it is
   * pending, asked of ag_decision_refusal: the one definition of who may decide (see docs/policies.md).
   * Empty once the approval is settled or past its deadline.
   */
  entitledMembers(orgId: string, approvalId: string, channel: DecisionChannel): Promise<EntitledMember[]> {
    return this.membersWhoMayDecide('entitled-members', orgId, approvalId, channel, '');
  }

  /**
   * The entitled members (as entitledMembers) who have not voted on the approval, through any
   * channel or key of theirs: whom a reminder is for.
   */
  undecidedMembers(orgId: string, approvalId: string, channel: DecisionChannel): Promise<EntitledMember[]> {
    return this.membersWhoMayDecide(
      'undecided-members',
      orgId,
      approvalId,
      channel,
      `AND NOT EXISTS (SELECT 1 FROM approval_votes v WHERE v.approval_id = a.id AND v.voter_key = 'user:' || m.id::text)`,
    );
  }

  private membersWhoMayDecide(
    name: string,
    orgId: string,
    approvalId: string,
    channel: DecisionChannel,
    condition: string,
  ): Promise<EntitledMember[]> {
    return this.sql.query<EntitledMember>(
      name,
      `SELECT ${ENTITLED_MEMBER_COLUMNS}
       FROM approvals a JOIN members m ON m.org_id = a.org_id
       WHERE ${oneApproval('$1', '$2', 'a')} AND a.status = 'pending' AND a.expires_at > clock_timestamp()
         AND ag_decision_refusal(a, jsonb_build_object('type', 'user', 'id', m.id, 'email', m.email, 'role', m.role), $3) IS NULL
         ${condition}
       ORDER BY m.created_at, m.id`,
      [orgId, approvalId, channel],
    );
  }

  /**
   * Claims the notice: true when this caller may send it now, i.e. it was never claimed, or its last
   * attempt failed in a way that proves nothing left (`retry`). Concurrent claims: one wins.
   */
  async claim(key: NotificationKey): Promise<boolean> {
    const { orgId, approvalId, revision, channel } = key;
    const rows = await this.sql.query(
      'notification-claim',
      `INSERT INTO approval_notifications (approval_id, channel, recipient, org_id, revision)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (approval_id, revision, channel, recipient) DO UPDATE
         SET status = 'sending', attempts = approval_notifications.attempts + 1, claimed_at = clock_timestamp()
         WHERE approval_notifications.status = 'retry'
       RETURNING 1`,
      [approvalId, channel, storedRecipient(key), orgId, revision],
    );
    return rows.length > 0;
  }

  async markSent(key: NotificationKey, posted?: PostedMessage | void): Promise<void> {
    const slack = posted && 'slackTs' in posted ? posted : null;
    const teams = posted && 'teamsActivityId' in posted ? posted : null;
    await this.sql.query(
      'notification-sent',
      `UPDATE approval_notifications SET status = 'sent', sent_at = clock_timestamp(), last_error = NULL,
              slack_channel_id = $4, slack_ts = $5, teams_conversation_id = $7, teams_activity_id = $8
       WHERE approval_id = $1 AND channel = $2 AND recipient = $3 AND revision = $6`,
      [
        key.approvalId,
        key.channel,
        storedRecipient(key),
        slack?.slackChannelId ?? null,
        slack?.slackTs ?? null,
        key.revision,
        teams?.teamsConversationId ?? null,
        teams?.teamsActivityId ?? null,
      ],
    );
  }

  /**
   * Sends a notice at most once: claimed before `send`, marked sent after it, with the message
   * `send` answers when it posted one (for the updates that follow). A failure that changed nothing
   * (a RetryLater, or one `notApplied` says so of) gives the claim back and is thrown, for the job to
   * retry; any other leaves the notice uncertain, never sent again, and is logged as `uncertainly`.
   * What it answers: what was posted, or why nothing was.
   */
  async sendOnce<Posted extends PostedMessage | void>(
    key: NotificationKey,
    send: () => Promise<Posted>,
    options: { notApplied: (error: unknown) => boolean; logger: Logger; uncertainly: string },
  ): Promise<{ sent: Posted } | { claimed: 'already' } | { uncertain: true }> {
    if (!(await this.claim(key))) return { claimed: 'already' };
    let posted: Posted;
    try {
      posted = await send();
    } catch (error) {
      const outcome = error instanceof RetryLater || options.notApplied(error) ? 'retry' : 'uncertain';
      await this.markFailed(key, outcome, error instanceof Error ? error.message : String(error));
      if (outcome === 'retry') throw error;
      options.logger.warn({ err: error, approvalId: key.approvalId }, options.uncertainly);
      return { uncertain: true };
    }
    await this.markSent(key, posted);
    return { sent: posted };
  }

  /**
   * Records how an attempt failed: `retry` when nothing can have left (it may be claimed again),
   * `uncertain` when it may have been delivered (it never is sent again).
   */
  async markFailed(key: NotificationKey, outcome: 'retry' | 'uncertain', error: string): Promise<void> {
    await this.sql.query(
      'notification-failed',
      `UPDATE approval_notifications SET status = $4::"NotificationStatus", last_error = $5
       WHERE approval_id = $1 AND channel = $2 AND recipient = $3 AND revision = $6 AND status = 'sending'`,
      [key.approvalId, key.channel, storedRecipient(key), outcome, error.slice(0, 2000), key.revision],
    );
  }

  /**
   * Every Slack message posted for a revision of an approval (its current one when `revision` is
   * null): the messages of an earlier revision keep showing how that revision ended.
   */
  postedSlackMessages(approvalId: string, revision: number | null = null): Promise<PostedSlackMessage[]> {
    return this.sql.query<PostedSlackMessage>(
      'notification-slack-messages',
      `SELECT ${POSTED_SLACK_MESSAGE_COLUMNS} FROM approval_notifications n JOIN approvals a ON a.id = n.approval_id
       WHERE n.approval_id = $1 AND n.revision = coalesce($2, a.revision)
         AND n.channel = 'slack' AND n.status = 'sent' AND n.slack_ts IS NOT NULL`,
      [approvalId, revision],
    );
  }

  /** Every Teams card posted for a revision of an approval (its current one when `revision` is null). */
  postedTeamsActivities(approvalId: string, revision: number | null = null): Promise<PostedTeamsActivity[]> {
    return this.sql.query<PostedTeamsActivity>(
      'notification-teams-activities',
      `SELECT ${POSTED_TEAMS_ACTIVITY_COLUMNS} FROM approval_notifications n JOIN approvals a ON a.id = n.approval_id
       WHERE n.approval_id = $1 AND n.revision = coalesce($2, a.revision)
         AND n.channel = 'teams' AND n.status = 'sent' AND n.teams_activity_id IS NOT NULL`,
      [approvalId, revision],
    );
  }
}
