import express, { type Express } from 'express';
import type { SlackInteractions } from '../modules/slack/slack-interactions.js';

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
