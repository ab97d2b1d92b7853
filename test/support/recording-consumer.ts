import { setTimeout as sleep } from 'node:timers/promises';
import { defineEventHandler } from '../../src/consumers/consumer.js';
import type { Sql } from '../../src/data/database.js';
import type { AuditEventType } from '../../src/modules/audit/audit-events.js';

/** The event types the recording consumer subscribes to; it must see nothing else. */
export const RECORDED_TYPES = [
  'approval.created',
  'approval.approved',
  'approval.rejected',
  'policy.updated',
] as const satisfies readonly AuditEventType[];

/** Its table, in the test's own database: one row per event it acted on, with how often it ran for it. */
export async function createRecordingTable(sql: Sql): Promise<void> {
  await sql.query(
    null,
    'CREATE TABLE IF NOT EXISTS recorded_events (event_id uuid PRIMARY KEY, type text NOT NULL, org_id uuid NOT NULL, runs integer NOT NULL)',
    [],
  );
}

/**
 * A consumer written the way a new channel would be: one definition, registered by passing it to
 * the composition root. Its effect is idempotent per event (an upsert), as every consumer's must
 * be under at-least-once delivery; `runs` shows how often it was actually called.
 */
export const recordingConsumer = defineEventHandler({
  name: 'test-recorder',
  events: RECORDED_TYPES,
  options: { attempts: 5, backoff: { type: 'fixed', delay: 100 }, concurrency: () => 4 },
  handle:
    ({ sql }) =>
    async (event) => {
      // Slow enough that a worker killed mid-run leaves jobs in flight.
      await sleep(Number(process.env.RECORDING_DELAY_MS ?? 0));
      await sql.query(
        'record-event',
        `INSERT INTO recorded_events (event_id, type, org_id, runs) VALUES ($1, $2, $3, 1)
         ON CONFLICT (event_id) DO UPDATE SET runs = recorded_events.runs + 1`,
        [event.id, event.type, event.orgId],
      );
      return { recorded: event.id };
    },
});
