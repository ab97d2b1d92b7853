import { z } from 'zod';
import { ConflictError, DecisionRefusedError, UnauthorizedError, ValidationError } from '../../lib/errors.js';
import { fieldErrors } from '../../lib/validation.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../lib/logger.js';
import { decisionSchema, type ApprovalView } from '../approvals/approval-schemas.js';
import type { ApprovalService, Voter } from '../approvals/approval-service.js';
import type { MemberService } from '../members/member-service.js';
import { consoleUrl } from '../notifications/approval-notice.js';
import {
  APPROVE_ACTION,
  CHANGES_ACTION,
  CHANGES_MODAL,
  DECISION_BLOCK,
  FEEDBACK_BLOCK,
  FEEDBACK_MODALS,
  feedbackModal,
  REJECT_ACTION,
  REJECT_MODAL,
  type FeedbackModal,
} from './slack-messages.js';
import type { SlackEphemeral } from './slack-schemas.js';
import type { SlackConnection, SlackService } from './slack-service.js';

const identity = { team: z.object({ id: z.string().min(1) }), user: z.object({ id: z.string().min(1) }) };

/** The interactions this service answers; any other type (a closed modal, say) is acknowledged and ignored. */
const interactionSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('block_actions'),
    ...identity,
    channel: z.object({ id: z.string() }).nullish(),
    trigger_id: z.string().min(1),
    actions: z.array(z.object({ action_id: z.string(), value: z.string().optional(), block_id: z.string().optional() })).min(1),
  }),
  z.object({
    type: z.literal('view_submission'),
    ...identity,
    view: z.object({
      callback_id: z.string(),
      private_metadata: z.string(),
      state: z.object({ values: z.record(z.string(), z.record(z.string(), z.object({ value: z.string().nullish() }))) }),
    }),
  }),
]);
type Interaction = z.output<typeof interactionSchema>;

const buttonSchema = z.object({
  action_id: z.enum([APPROVE_ACTION, REJECT_ACTION, CHANGES_ACTION]),
  value: z.uuid(),
  block_id: z.string().optional(),
});

/** The revision a message's buttons are for (`decision:<revision>`); none on messages posted before revisions. */
function buttonRevision(blockId: string | undefined): number | undefined {
  const match = new RegExp(`^${DECISION_BLOCK}:([1-9][0-9]{0,3})$`).exec(blockId ?? '');
  return match ? Number(match[1]) : undefined;
}
/** The revision is absent from the metadata of modals opened before revisions existed. */
const modalMetadataSchema = z.object({
  approvalId: z.uuid(),
  channelId: z.string().optional(),
  revision: z.number().int().min(1).optional(),
});

/** The modal each feedback button opens. */
const MODAL_OF = { [REJECT_ACTION]: REJECT_MODAL, [CHANGES_ACTION]: CHANGES_MODAL } as const;
const isFeedbackModal = (callbackId: string): callbackId is FeedbackModal => Object.hasOwn(FEEDBACK_MODALS, callbackId);

/** Where messages to one Slack user wait for a worker (the slack-ephemeral queue). */
export interface EphemeralQueue {
  add(notice: SlackEphemeral): Promise<void>;
}

export interface SlackInteractionDeps {
  slack: SlackService;
  approvals: ApprovalService;
  members: MemberService;
  ephemeralQueue: EphemeralQueue;
  config: Pick<Config, 'PUBLIC_URL'>;
  logger: Logger;
}

/** Slack's answer: nothing (200, acknowledged), or a body (errors shown in the modal). */
export interface InteractionAnswer {
  body?: unknown;
}

/**
 * Buttons pressed and modals submitted in Slack (see docs/members-and-channels.md). The request is verified before
 * anything of it is read; the Slack user acts as the member their Slack identity is linked to
 * (never matched by email); every vote goes through ApprovalService.decide with channel `slack`.
 * Only database work happens before the answer; messages to the user leave from a job.
 */
export class SlackInteractions {
  constructor(private readonly services: SlackInteractionDeps) {}

  async handle(rawBody: Buffer, headers: { timestamp: string | undefined; signature: string | undefined }): Promise<InteractionAnswer> {
    const verified = await this.services.slack.verify(headers.timestamp, headers.signature, rawBody);
    if (verified.length === 0) {
      throw new UnauthorizedError('The request is not signed by a connected Slack workspace, or its timestamp is not within 300 s.');
    }
    const interaction = parseInteraction(rawBody);
    if (!interaction) return {};
    const connections = verified.filter((connection) => connection.teamId === interaction.team.id);
    if (connections.length === 0) throw new UnauthorizedError('The request comes from a Slack workspace no organization connected.');
    return interaction.type === 'block_actions' ? this.onButton(connections, interaction) : this.onModal(connections, interaction);
  }

  private async onButton(
    connections: SlackConnection[],
    interaction: Extract<Interaction, { type: 'block_actions' }>,
  ): Promise<InteractionAnswer> {
    const button = buttonSchema.safeParse(interaction.actions[0]);
    if (!button.success) return {};
    const found = await this.locate(connections, button.data.value);
    if (!found) return {};
    const { connection, approval } = found;
    const channelId = interaction.channel?.id ?? connection.channel;
    const who = { orgId: connection.orgId, channelId, userId: interaction.user.id };
    const voter = await this.voterOf(connection, interaction);
    if (!voter) {
      await this.tell({ kind: 'link', ...who, teamId: interaction.team.id });
      return {};
    }
    const revision = buttonRevision(button.data.block_id);
    if (revision !== undefined && revision !== approval.revision) {
      const text = `This message is about revision ${revision}; the request was revised since (revision ${approval.revision}), so it decides nothing. The newer message, or the console, has the current revision: ${consoleUrl(this.services.config.PUBLIC_URL, approval.id)}`;
      await this.tell({ kind: 'text', ...who, text });
      return {};
    }
    try {
      if (button.data.action_id === APPROVE_ACTION) {
        await this.services.approvals.decide(
          connection.orgId,
          approval.id,
          { verdict: 'approved', ...(revision ? { revision } : {}) },
          voter,
        );
        return {};
      }
      await this.services.approvals.assertMayVote(connection.orgId, approval.id, voter);
    } catch (error) {
      if (!(error instanceof DecisionRefusedError || error instanceof ConflictError)) throw error;
      await this.tell({ kind: 'text', ...who, text: error.message });
      return {};
    }
    // The trigger id expires 3 s after the press: the modal opens now or never.
    const modal = MODAL_OF[button.data.action_id];
    const client = await connection.client();
    await client.views
      .open({ trigger_id: interaction.trigger_id, view: feedbackModal(modal, approval, channelId) })
      .catch(async (error: unknown) => {
        this.services.logger.warn({ err: error, approvalId: approval.id, modal }, 'could not open a Slack feedback modal');
        const url = consoleUrl(this.services.config.PUBLIC_URL, approval.id);
        const what = modal === REJECT_MODAL ? 'the rejection form; reject' : 'the request for changes; ask for them';
        await this.tell({ kind: 'text', ...who, text: `Slack could not open ${what} in the console: ${url}` });
      });
    return {};
  }

  private async onModal(
    connections: SlackConnection[],
    interaction: Extract<Interaction, { type: 'view_submission' }>,
  ): Promise<InteractionAnswer> {
    const kind = interaction.view.callback_id;
    if (!isFeedbackModal(kind)) return {};
    const { verdict, submit } = FEEDBACK_MODALS[kind];
    const metadata = modalMetadataSchema.safeParse(safeJson(interaction.view.private_metadata));
    const found = metadata.success ? await this.locate(connections, metadata.data.approvalId) : null;
    if (!found) return modalError('This request no longer exists.');
    const voter = await this.voterOf(found.connection, interaction);
    if (!voter) return modalError(`Your Slack account is not linked to a member of Approval Gate; press ${submit} again to get a link.`);
    const feedback = interaction.view.state.values[FEEDBACK_BLOCK]?.[FEEDBACK_BLOCK]?.value?.trim();
    if (verdict === 'changes_requested' && !feedback) return modalError('Say what should change: the agent revises the request by it.');
    const revision = metadata.success ? metadata.data.revision : undefined;
    // The API's own rules (feedback within its limit): Slack's max_length keeps a longer one out, a crafted submission may not.
    const decision = decisionSchema.safeParse({ verdict, ...(feedback ? { feedback } : {}), ...(revision ? { revision } : {}) });
    if (!decision.success) return modalError(decision.error.issues[0]!.message);
    try {
      await this.services.approvals.decide(found.connection.orgId, found.approval.id, decision.data, voter);
    } catch (error) {
      if (error instanceof DecisionRefusedError || error instanceof ConflictError) return modalError(error.message);
      throw error;
    }
    return {};
  }

  /** The approval of the button, in the organization (of those that verified) that has it. */
  private async locate(
    connections: SlackConnection[],
    approvalId: string,
  ): Promise<{ connection: SlackConnection; approval: ApprovalView } | null> {
    for (const connection of connections) {
      const approval = await this.services.approvals.find(connection.orgId, approvalId);
      if (approval) return { connection, approval };
    }
    return null;
  }

  /** The member linked to the clicking Slack user (team and user id), as a voter through Slack; null when unlinked. */
  private async voterOf(connection: SlackConnection, interaction: Interaction): Promise<Voter | null> {
    const member = await this.services.members.findBySlackIdentity(connection.orgId, interaction.team.id, interaction.user.id);
    return member && { actor: { type: 'user', id: member.id, email: member.email }, role: member.role, channel: 'slack' };
  }

  private tell(notice: SlackEphemeral): Promise<void> {
    return this.services.ephemeralQueue.add(notice);
  }
}

/** Slack's form-encoded body: one `payload` field of JSON. Null for interaction types this service does not handle. */
function parseInteraction(rawBody: Buffer): Interaction | null {
  const payload = safeJson(new URLSearchParams(rawBody.toString('utf8')).get('payload') ?? '');
  const type = (payload as { type?: unknown } | null)?.type;
  if (type !== 'block_actions' && type !== 'view_submission') {
    if (payload === null) throw new ValidationError([{ path: 'payload', message: 'payload must be a JSON object, form-encoded' }]);
    return null;
  }
  const parsed = interactionSchema.safeParse(payload);
  if (!parsed.success) throw new ValidationError(fieldErrors(parsed.error, 'payload'));
  return parsed.data;
}

function safeJson(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' ? value : null;
  } catch {
    return null;
  }
}

function modalError(message: string): InteractionAnswer {
  return { body: { response_action: 'errors', errors: { [FEEDBACK_BLOCK]: message } } };
}
