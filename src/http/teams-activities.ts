import express, { type Express } from 'express';
import type { TeamsActivities } from '../modules/teams/teams-activities.js';
import { problemContent, type DocumentedOperation } from './openapi.js';

/** The Bot Framework's side of the Teams integration in the OpenAPI document. */
export const teamsActivityOperation: DocumentedOperation = {
  method: 'post',
  path: '/teams/messages',
  operation: {
    summary: "Activities the Bot Framework sends to the Teams bot (the bot's messaging endpoint): card actions (Action.Execute)",
    description:
      "authorization: Bearer <the Bot Framework's JWT>, verified against the configured OpenID metadata's keys: RS256, issuer, audience (the bot's app id), expiry, and the serviceurl claim equal to the activity's serviceUrl.",
    tags: ['teams'],
    security: [],
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      200: {
        description: 'Handled: an invoke response (the card as the presser sees it now), or empty for activities the bot ignores.',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      401: { description: 'Not signed by the Bot Framework for a connected bot and tenant.', content: problemContent },
    },
  },
};

/** POST /teams/messages: verified by TeamsActivities before anything of the activity but its serviceUrl is read. */
export function mountTeamsActivities(app: Express, activities: TeamsActivities): void {
  app.post('/teams/messages', express.json({ type: () => true, limit: '1mb' }), async (req, res) => {
    const answer = await activities.handle(req.get('authorization'), req.body as unknown);
    if (answer.body === undefined) res.status(200).end();
    else res.status(200).json(answer.body);
  });
}
