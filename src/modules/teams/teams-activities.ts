import { z } from 'zod';
import type { Config } from '../../config.js';
import { ConflictError, DecisionRefusedError, UnauthorizedError } from '../../lib/errors.js';
import { decisionSchema, type ApprovalView } from '../approvals/approval-schemas.js';
import type { ApprovalService, Voter } from '../approvals/approval-service.js';
import type { MemberService } from '../members/member-service.js';
import { consoleUrl } from '../notifications/approval-notice.js';
import { approvalCard, CARD_VERBS, FEEDBACK_INPUT, type CardNotice } from './teams-cards.js';
import type { TeamsConnection, TeamsService } from './teams-service.js';

/** What this service reads of an activity before it is verified: only where it says it comes from. */
const envelopeSchema = z.object({ serviceUrl: z.string().min(1) });

/** The one activity this service acts on: a Universal Action (Action.Execute) pressed on a card. */
const cardActionSchema = z.object({
  type: z.literal('invoke'),
  name: z.literal('adaptiveCard/action'),
  from: z.object({ aadObjectId: z.string().min(1).optional() }),
  conversation: z.object({ tenantId: z.string().optional() }).optional(),
  channelData: z.object({ tenant: z.object({ id: z.string() }).optional() }).optional(),
  value: z.object({
    action: z.object({
      type: z.literal('Action.Execute'),
      verb: z.enum(Object.keys(CARD_VERBS) as [keyof typeof CARD_VERBS, ...(keyof typeof CARD_VERBS)[]]),
      data: z.object({
        approvalId: z.uuid(),
        revision: z.number().int().min(1).optional(),
        [FEEDBACK_INPUT]: z.string().optional(),
      }),
    }),
  }),
});
type CardAction = z.output<typeof cardActionSchema>;

/** The HTTP answer to the Bot Framework: 200 with an invoke response, or 200 and nothing for activities ignored. */
export interface ActivityAnswer {
  body?: unknown;
}

export interface TeamsActivityDeps {
  teams: TeamsService;
  approvals: ApprovalService;
  members: MemberService;
  config: Pick<Config, 'PUBLIC_URL'>;
}

/**
 * Activities the Bot Framework sends to the bot (see docs/members-and-channels.md). The token is
 * verified before anything of the activity but its serviceUrl is read; the Teams user acts as the
 * member their Entra object id is linked to (never matched by email); every vote goes through
 * ApprovalService.decide with channel `teams`. The answer is the card as the presser should see
 * it now; the card everyone sees is replaced by the teams-update consumer after the commit.
 */
export class TeamsActivities {
  constructor(private readonly services: TeamsActivityDeps) {}

  async handle(authorization: string | undefined, body: unknown): Promise<ActivityAnswer> {
    const envelope = envelopeSchema.safeParse(body);
    const verified = await this.services.teams.verify(authorization, envelope.success ? envelope.data.serviceUrl : undefined);
    if (verified.length === 0) {
      throw new UnauthorizedError(
        'The activity is not signed by the Bot Framework for a connected bot (issuer, audience, expiry, signing key and serviceUrl are checked).',
      );
    }
    const parsed = cardActionSchema.safeParse(body);
    if (!parsed.success) return {};
    const action = parsed.data;
    const tenantId = action.channelData?.tenant?.id ?? action.conversation?.tenantId;
    const connections = verified.filter((connection) => connection.tenantId === tenantId?.toLowerCase());
    if (connections.length === 0) throw new UnauthorizedError('The activity comes from a tenant no organization connected this bot in.');
    return this.onCardAction(connections, action);
  }

  private async onCardAction(connections: TeamsConnection[], action: CardAction): Promise<ActivityAnswer> {
    const { verb, data } = action.value.action;
    const found = await this.locate(connections, data.approvalId);
    if (!found) return errorAnswer(404, 'This request no longer exists.');
    const { connection, approval } = found;
    const aadObjectId = action.from.aadObjectId?.toLowerCase();
    const member = aadObjectId ? await this.services.members.findByTeamsIdentity(connection.orgId, aadObjectId) : null;
    if (!member) {
      if (!aadObjectId)
        return this.card(connection, approval, { text: 'Teams did not say who you are (no Entra object id), so nothing was decided.' });
      const url = await this.services.members.issueTeamsLink(connection.orgId, aadObjectId);
      return this.card(connection, approval, {
        text: 'Your Teams account is not linked to a member of Approval Gate. Link it (the link works once, for 15 minutes), then press again.',
        link: { title: 'Link my Teams account', url },
      });
    }
    const voter: Voter = { actor: { type: 'user', id: member.id, email: member.email }, role: member.role, channel: 'teams' };
    const feedback = data[FEEDBACK_INPUT]?.trim();
    const verdict = CARD_VERBS[verb];
    if (verdict === 'changes_requested' && !feedback) {
      return this.card(connection, approval, { text: 'Say what should change in the feedback box: the agent revises the request by it.' });
    }
    const decision = decisionSchema.safeParse({
      verdict,
      ...(feedback ? { feedback } : {}),
      ...(data.revision ? { revision: data.revision } : {}),
    });
    if (!decision.success) return this.card(connection, approval, { text: decision.error.issues[0]!.message });
    try {
      const decided = await this.services.approvals.decide(connection.orgId, approval.id, decision.data, voter);
      return this.card(connection, decided, null);
    } catch (error) {
      if (!(error instanceof DecisionRefusedError || error instanceof ConflictError)) throw error;
      return this.card(connection, approval, { text: error.message });
    }
  }

  /** The approval of the card, in the organization (of those that verified) that has it. */
  private async locate(
    connections: TeamsConnection[],
    approvalId: string,
  ): Promise<{ connection: TeamsConnection; approval: ApprovalView } | null> {
    for (const connection of connections) {
      const approval = await this.services.approvals.find(connection.orgId, approvalId);
      if (approval) return { connection, approval };
    }
    return null;
  }

  /** The card as the presser should see it: the approval as it is now (`known` if it is gone), and what they are told. */
  private async card(connection: TeamsConnection, known: ApprovalView, notice: CardNotice | null): Promise<ActivityAnswer> {
    const now = await this.services.approvals.findForNotice(connection.orgId, known.id);
    const card = approvalCard(now?.approval ?? known, consoleUrl(this.services.config.PUBLIC_URL, known.id), now?.changes ?? null, notice);
    return { body: { statusCode: 200, type: 'application/vnd.microsoft.card.adaptive', value: card } };
  }
}

function errorAnswer(statusCode: number, message: string): ActivityAnswer {
  return { body: { statusCode, type: 'application/vnd.microsoft.error', value: { code: 'NotFound', message } } };
}
