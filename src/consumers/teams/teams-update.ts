import { refreshApprovalCard, teamsJobOptions } from '../../modules/teams/teams-cards-refresh.js';
import { TeamsCallError } from '../../modules/teams/teams-connector.js';
import { defineEventHandler } from '../consumer.js';
import { POSTED_CARD_EVENTS } from '../posted-card-events.js';

/**
 * Every Teams card posted for an approval's current revision follows it (see
 * docs/members-and-channels.md): a vote under quorum shows on it, and a settlement anywhere or a
 * request for changes replaces the buttons with the outcome, who decided and when, for everyone.
 */
export const teamsUpdateConsumer = defineEventHandler({
  name: 'teams-update',
  events: POSTED_CARD_EVENTS,
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('teams', orgIds),
  options: teamsJobOptions,
  handle: (services) => async (event) => {
    const approvalId = String(event.data.approvalId);
    // A request for changes names its revision: the agent may have revised it (a new post) since.
    const revision = typeof event.data.revision === 'number' ? event.data.revision : null;
    const posts = await services.notifications.postedTeamsActivities(approvalId, revision);
    if (posts.length === 0) return { skipped: 'nothing was posted for it' };
    const connection = await services.teams.connection(event.orgId);
    if (!connection) return { skipped: 'no Teams bot is connected' };
    let updated = 0;
    for (const posted of posts) {
      try {
        await refreshApprovalCard(services, connection, approvalId, posted, null);
        updated += 1;
      } catch (error) {
        // A deleted post or a bot removed from the team (a 4xx): asking again changes nothing.
        if (!(error instanceof TeamsCallError && error.status !== null && error.status < 500)) throw error;
        services.logger.warn({ err: error, approvalId, activityId: posted.teamsActivityId }, 'Teams refused to update an approval card');
      }
    }
    return { updated };
  },
});
