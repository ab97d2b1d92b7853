import express, { type Express } from 'express';
import type { SlackInteractions } from '../modules/slack/slack-interactions.js';
import { formBody, problemContent, type DocumentedOperation } from './openapi.js';

/** Slack's side of the integration in the OpenAPI document. */
export const slackInteractionOperation: DocumentedOperation = {
  method: 'post',
  path: '/slack/interactions',
  operation: {
    summary: "Slack's button presses and modal submissions (the app's Interactivity Request URL)",
    description:
      'Signed by Slack: x-slack-signature must be v0= + hex HMAC-SHA256(signing secret, "v0:<x-slack-request-timestamp>:<raw body>") for a connected organization, and the timestamp within 300 s.',
    tags: ['slack'],
    security: [],
    parameters: [
      { name: 'x-slack-request-timestamp', in: 'header', required: true, schema: { type: 'string' } },
      { name: 'x-slack-signature', in: 'header', required: true, schema: { type: 'string' } },
    ],
    requestBody: formBody(['payload'], { payload: { description: "Slack's JSON payload." } }),
    responses: {
      200: {
        description: 'Handled: empty, or a JSON answer for Slack (modal errors).',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      401: { description: 'Not signed by a connected Slack workspace, or the timestamp is not within 300 s.', content: problemContent },
      422: { description: 'The payload could not be read.', content: problemContent },
    },
  },
};

/**
 * POST /slack/interactions: Slack's button presses and modal submissions. The body is kept raw,
 * since the signature covers its exact bytes; nothing parses it before SlackInteractions verified it.
 */
export function mountSlackInteractions(app: Express, interactions: SlackInteractions): void {
  app.post('/slack/interactions', express.raw({ type: () => true, limit: '1mb' }), async (req, res) => {
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const answer = await interactions.handle(rawBody, {
      timestamp: req.get('x-slack-request-timestamp'),
      signature: req.get('x-slack-signature'),
    });
    if (answer.body === undefined) res.status(200).end();
    else res.status(200).json(answer.body);
  });
}
