import { APPROVAL_FEED_TYPES } from '../../modules/approvals/approval-feed.js';
import type { EventConsumer } from '../consumer.js';

/**
 * The console's live inbox: every committed approval event is published on the approval feed,
 * straight from the relay (no job), so open consoles hear of it in milliseconds. It keeps no
 * durable work of its own: a console that missed a message replays it from the audit chain.
 */
export const liveUpdatesConsumer: EventConsumer<unknown> = {
  name: 'live-updates',
  events: APPROVAL_FEED_TYPES,
  async plan(events, { approvalFeed }) {
    await approvalFeed.publish(events);
    return [];
  },
};
