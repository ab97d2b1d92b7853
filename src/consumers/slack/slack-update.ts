import { isSlackRefusal } from '../../modules/slack/slack-api.js';
import { defineEventHandler } from '../consumer.js';
import { POSTED_CARD_EVENTS } from '../posted-card-events.js';
import { refreshApprovalMessage, slackJobOptions } from '../../modules/slack/slack-calls.js';

/**
 * Every Slack message posted for an approval's current revision follows it (see docs/members-and-channels.md): a vote
 * under quorum shows on it, and a settlement anywhere (console, link, API, Slack, expiry, escalation)
 * or a request for changes replaces the buttons with the outcome, who decided and when.
 */
export const slackUpdateConsumer = defineEventHandler({
  name: 'slack-update',
  events: POSTED_CARD_EVENTS,
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('slack', orgIds),
  options: slackJobOptions,
  handle: (services) => async (event) => {
    const approvalId = String(event.data.approvalId);
    // A request for changes names its revision: the agent may have revised it (a new post) since.
    const revision = typeof event.data.revision === 'number' ? event.data.revision : null;
    const messages = await services.notifications.postedSlackMessages(approvalId, revision);
    if (messages.length === 0) return { skipped: 'nothing was posted for it' };
    const connection = await services.slack.connection(event.orgId);
    if (!connection) return { skipped: 'no Slack workspace is connected' };
    let updated = 0;
    for (const message of messages) {
      try {
        await refreshApprovalMessage(services, connection, approvalId, message, null);
        updated += 1;
      } catch (error) {
        if (!isSlackRefusal(error)) throw error;
        // A deleted message or a channel the bot left: asking again changes nothing.
        services.logger.warn({ err: error, approvalId, ts: message.slackTs }, 'Slack refused to update an approval message');
      }
    }
    return { updated };
  },
});
