import { slackIntegrationInputSchema, slackIntegrationViewSchema } from '../../modules/slack/slack-schemas.js';
import type { SlackService } from '../../modules/slack/slack-service.js';
import { teamsIntegrationInputSchema, teamsIntegrationViewSchema } from '../../modules/teams/teams-schemas.js';
import type { TeamsService } from '../../modules/teams/teams-service.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

export function integrationRoutes(slack: SlackService, teams: TeamsService) {
  return [
    defineRoute({
      method: 'put',
      path: '/v1/integrations/slack',
      summary: 'Connect a Slack workspace (the bot token is checked with auth.test); secrets are never returned',
      scope: 'integrations:write',
      body: slackIntegrationInputSchema,
      responses: {
        200: { description: 'Connected.', schema: slackIntegrationViewSchema },
        ...problemResponses(401, 403, 422, 503),
      },
      handler: async ({ tenant, body }) => ({ status: 200, body: await slack.connect(tenant, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/integrations/slack',
      summary: 'The connected Slack workspace',
      scope: 'integrations:read',
      responses: { 200: { description: 'Connected.', schema: slackIntegrationViewSchema }, ...problemResponses(401, 403, 404) },
      handler: async ({ tenant }) => ({ status: 200, body: await slack.view(tenant.orgId) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/integrations/slack',
      summary: 'Disconnect Slack: nothing more is posted, and buttons already posted stop working',
      scope: 'integrations:write',
      responses: { 204: { description: 'Disconnected.' }, ...problemResponses(401, 403, 404) },
      handler: async ({ tenant }) => {
        await slack.disconnect(tenant);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/integrations/teams',
      summary: 'Connect a Microsoft Teams bot (its credentials are checked by asking Entra for a token); the app secret is never returned',
      scope: 'integrations:write',
      body: teamsIntegrationInputSchema,
      responses: {
        200: { description: 'Connected.', schema: teamsIntegrationViewSchema },
        ...problemResponses(401, 403, 422, 503),
      },
      handler: async ({ tenant, body }) => ({ status: 200, body: await teams.connect(tenant, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/integrations/teams',
      summary: 'The connected Teams bot',
      scope: 'integrations:read',
      responses: { 200: { description: 'Connected.', schema: teamsIntegrationViewSchema }, ...problemResponses(401, 403, 404) },
      handler: async ({ tenant }) => ({ status: 200, body: await teams.view(tenant.orgId) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/integrations/teams',
      summary: 'Disconnect Teams: nothing more is posted, and cards already posted stop deciding',
      scope: 'integrations:write',
      responses: { 204: { description: 'Disconnected.' }, ...problemResponses(401, 403, 404) },
      handler: async ({ tenant }) => {
        await teams.disconnect(tenant);
        return { status: 204 };
      },
    }),
  ];
}
