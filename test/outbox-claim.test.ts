import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolSql } from '../src/data/database.js';
import { OutboxStore } from '../src/modules/outbox/outbox-store.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

const RELAYED = 20_000;
const BATCH = 100;

/** The plan of the last claim (auto_explain). */
function lastClaimPlan(plans: string[]): string {
  return plans.filter((plan) => plan.includes('Update on outbox_messages')).at(-1) ?? '';
}

describe("the outbox relay's claim and its lag", () => {
  let client: pg.Client;
  const plans: string[] = [];

  beforeAll(async () => {
    client = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await client.connect();
    // Between two vacuums: every row the relay has relayed leaves a dead version behind.
    await client.query('ALTER TABLE outbox_messages SET (autovacuum_enabled = false)');
    await client.query(
      `INSERT INTO outbox_messages (org_id, event_id, event_type) SELECT $1::uuid, gen_random_uuid(), 'approval.approved' FROM generate_series(1, $2::int)`,
      [org.orgId, RELAYED],
    );
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.query("LOAD 'auto_explain'");
    await client.query(
      `SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
       SET client_min_messages = log`,
    );
  });
  afterAll(() => client?.end());

  it('scans the rows not relayed yet in id order and stops at its batch, instead of every version relayed since the last vacuum', async () => {
    const outbox = new OutboxStore(poolSql(client));
    // As the relay goes: claim a batch, hand it over, mark it relayed.
    for (let relayed = 0; relayed < RELAYED; relayed += BATCH) {
      const claimed = await outbox.claim(BATCH, 30_000);
      expect(claimed).toHaveLength(BATCH);
      await outbox.markRelayed(claimed.map((message) => message.id));
    }
    const { rows: waiting } = await client.query<{ eventId: string }>(
      `INSERT INTO outbox_messages (org_id, event_id, event_type) SELECT $1::uuid, gen_random_uuid(), 'approval.approved' FROM generate_series(1, 5)
       RETURNING event_id AS "eventId"`,
      [org.orgId],
    );
    plans.length = 0;
    // The claim reads the events it leased in the same statement, in outbox order.
    const claimed = await outbox.claim(BATCH, 30_000);
    expect(claimed.map(({ event }) => [event.id, event.type, event.orgId])).toEqual(
      waiting.map(({ eventId }) => [eventId, 'approval.approved', org.orgId]),
    );
    // An ordered scan of the partial index stops at the batch and marks the entries it finds dead,
    // so that later claims skip them; the bitmap scan of the full index on relayed_at went to the
    // heap for every dead version at every claim. The buffers either reads depend on what else
    // holds back the cluster's horizon (a standby's feedback, a replication slot), so the plan is
    // what is held.
    const plan = lastClaimPlan(plans);
    expect(plan).toMatch(/Index Scan using outbox_messages_unrelayed_idx on outbox_messages/);
    expect(plan).not.toMatch(/Bitmap/);
  });

  it("measures the relay's lag from the oldest row waiting, read from the same index, however many wait", async () => {
    // A relay that has stopped, after relaying all it had: a backlog, the oldest written ten minutes ago.
    await client.query('UPDATE outbox_messages SET relayed_at = clock_timestamp() WHERE relayed_at IS NULL');
    await client.query(
      `INSERT INTO outbox_messages (org_id, event_id, event_type, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'approval.approved', clock_timestamp() - interval '600 seconds' + n * interval '1 millisecond'
       FROM generate_series(1, $2::int) AS n`,
      [org.orgId, RELAYED],
    );
    plans.length = 0;
    const lag = await new OutboxStore(poolSql(client)).lagSeconds();
    expect(lag).toBeGreaterThan(599);
    expect(lag).toBeLessThan(630);
    const plan = plans.find((explained) => explained.includes('outbox_messages')) ?? '';
    expect(plan).toMatch(/Limit[\s\S]*Index Scan using outbox_messages_unrelayed_idx on outbox_messages/);
    expect(plan).not.toMatch(/Aggregate|Seq Scan|Bitmap/);
  });
});
