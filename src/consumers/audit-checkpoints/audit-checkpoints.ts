import { AUDIT_EVENT_TYPES } from '../../modules/audit/audit-events.js';
import { defineEventHandler } from '../consumer.js';

/**
 * Signs an organization's chain every AUDIT_CHECKPOINT_EVERY events (see docs/audit.md): the event
 * whose seq is a multiple of it gets a checkpoint at that seq. The other half of "whichever comes
 * first", after AUDIT_CHECKPOINT_SECONDS with new events, is the maintenance queue's.
 */
export const auditCheckpointsConsumer = defineEventHandler({
  name: 'audit-checkpoints',
  events: AUDIT_EVENT_TYPES,
  accepts: (event, config) =>
    config.AUDIT_SIGNING_KEY !== undefined && event.seq !== null && event.seq % config.AUDIT_CHECKPOINT_EVERY === 0,
  options: { attempts: 8, backoff: { type: 'exponential', delay: 1000 }, concurrency: (config) => config.CONSUMER_CONCURRENCY },
  handle:
    ({ checkpoints }) =>
    async (event) => {
      const checkpoint = await checkpoints.checkpoint(event.orgId, event.seq!);
      return checkpoint ? { seq: checkpoint.seq, keyId: checkpoint.keyId } : { skipped: 'signing is off' };
    },
});
