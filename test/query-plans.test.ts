import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsumerTaskStore } from '../src/consumers/consumer-task-store.js';
import { poolSql } from '../src/data/database.js';
import { ApprovalLookups, ApprovalStore } from '../src/modules/approvals/approval-store.js';
import { voteOn } from '../src/modules/approvals/approval-transitions.js';
import type { Creation } from '../src/modules/approvals/approval-types.js';
import type { DomainEvent } from '../src/modules/outbox/domain-events.js';
import { creationItem, voteItem } from '../src/modules/approvals/approval-writes.js';
import { NotificationStore } from '../src/modules/notifications/notification-store.js';
import { ReminderStore } from '../src/modules/notifications/reminder-store.js';
import { DeliveryStore } from '../src/modules/webhooks/delivery-store.js';
import { orphanCreation } from './support/orphans.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

/**
 * A session of its own whose every statement, those inside our SQL functions included, has its
 * plan sent back as a notice (auto_explain), planned as a prepared statement is once it has run
 * a few times (a generic plan, which PL/pgSQL keeps for the session). Autovacuum is off on `table`:
 * what the test leaves there, its statistics and its dead index entries stay as the test made them.
 */
async function explainingSession(table: string): Promise<{ client: pg.Client; plans: string[] }> {
  const client = new pg.Client({ connectionString: env.config.DATABASE_URL });
  await client.connect();
  const plans: string[] = [];
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  await client.query("LOAD 'auto_explain'");
  await client.query(
    `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
     SET client_min_messages = log; SET plan_cache_mode = force_generic_plan`,
  );
  await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  return { client, plans };
}

/** The plans of statements that read or update `table`, among those explained. */
const plansOver = (plans: string[], table: string) => plans.filter((plan) => new RegExp(`(Update on|Scan .*on) ${table}\\b`).test(plan));

describe('query plans, while the statistics say there are no approvals', () => {
  let session: { client: pg.Client; plans: string[] };
  let creations: Creation[];

  beforeAll(async () => {
    // Statistics that lag behind, as for a new tenant or a fresh deployment: taken while the table
    // was empty, and not again while one organization's pending approvals pile up.
    session = await explainingSession('approvals');
    await session.client.query('ANALYZE approvals');
    creations = Array.from({ length: 5000 }, (_, i) => orphanCreation(org.keyId, `pay-${i}`, 600));
    await session.client.query("SELECT ag_write_batch('create', $1::jsonb)", [
      JSON.stringify(creations.map((creation) => creationItem(org.orgId, creation, null))),
    ]);
  });
  afterAll(() => session.client.end());

  it('a deciding vote locks and settles its approval by primary key', async () => {
    const reviewer = { type: 'api_key' as const, id: org.reviewerKeyId };
    const { approval } = creations[2500]!;
    const { vote, recorded, settling } = voteOn({ ...approval, orgId: org.orgId }, { verdict: 'approved' }, reviewer, new Date());
    session.plans.length = 0;
    const { rows } = await session.client.query<{ outcomes: string[] }>("SELECT ag_write_batch('vote', $1::jsonb) AS outcomes", [
      JSON.stringify([voteItem(org.orgId, approval.id, reviewer, 'api', vote, recorded, settling)]),
    ]);
    expect(rows[0]!.outcomes).toEqual(['settled']);
    const plans = plansOver(session.plans, 'approvals');
    // The vote's lock, the foreign key check of its vote, and the settlement, which records its receipt's seq too.
    expect(plans).toHaveLength(3);
    for (const plan of plans) expect(plan, plan).toMatch(/Index Scan using approvals_pkey on approvals/);
  });

  it('reads of one approval go by primary key', async () => {
    const sql = poolSql(session.client);
    const { id } = creations[1000]!.approval;
    session.plans.length = 0;
    expect(await new ApprovalStore(env.services.db, sql, org.orgId).findById(id)).toMatchObject({ id });
    expect(await new ApprovalLookups(sql).findById(org.orgId, id)).toMatchObject({ id });
    expect(
      await new ApprovalStore(env.services.db, sql, org.orgId).voteRefusal(id, { type: 'api_key', id: org.reviewerKeyId }, 'api'),
    ).toBeNull();
    await new NotificationStore(sql).entitledMembers(org.orgId, id, 'email');
    const plans = plansOver(session.plans, 'approvals');
    expect(plans).toHaveLength(4);
    for (const plan of plans) expect(plan, plan).toMatch(/Index Scan using approvals_pkey on approvals/);
  });

  it('scheduling reminders reads its approvals by primary key', async () => {
    session.plans.length = 0;
    await new ReminderStore(poolSql(session.client)).schedule(creations.slice(0, 3).map(({ approval }) => approval.id));
    const plans = plansOver(session.plans, 'approvals');
    expect(plans).toHaveLength(1);
    expect(plans[0], plans[0]).toMatch(/Index Scan (using|on) approvals_pkey/);
    expect(plans[0], plans[0]).not.toMatch(/approvals_org_id_policy_key_created_at_id_idx|approvals_pending_expires_at_idx/);
  });

  it('the expiry sweeper walks the index of pending deadlines, in deadline order', async () => {
    const sql = poolSql(session.client);
    session.plans.length = 0;
    // A grace below zero puts the cut-off after the deadlines (600 s ahead), so every one is overdue.
    const overdue = await ApprovalStore.findOverdue(sql, -700_000, 10);
    expect(overdue).toHaveLength(10);
    const plans = plansOver(session.plans, 'approvals');
    expect(plans).toHaveLength(1);
    expect(plans[0], plans[0]).toMatch(/Index Scan using approvals_pending_expires_at_idx on approvals/);
  });

  it('the deadline watcher walks the same index, for the due approvals and for the next deadline', async () => {
    const sql = poolSql(session.client);
    session.plans.length = 0;
    const { due, nextInMs } = await ApprovalStore.dueDeadlines(sql, null, 10);
    expect(due).toEqual([]);
    expect(nextInMs).toBeGreaterThan(500_000);
    const plans = plansOver(session.plans, 'approvals');
    expect(plans).toHaveLength(1);
    expect(plans[0]!.match(/Index (Only )?Scan( Backward)? using approvals_pending_expires_at_idx on approvals/g), plans[0]).toHaveLength(
      2,
    );
    expect(plans[0], plans[0]).not.toMatch(/Seq Scan/);
  });
});

describe('query plans, while the pending deliveries index is full of finished ones', () => {
  let session: { client: pg.Client; plans: string[] };
  let freshEventId: string;

  beforeAll(async () => {
    // Finished deliveries leave their entries in the partial index of pending ones until a vacuum
    // removes them: autovacuum comes late on a large table, and never here.
    session = await explainingSession('webhook_deliveries');
    const { client } = session;
    await client.query(
      `INSERT INTO webhook_endpoints (id, org_id, url, events, secret)
       VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/plans', ARRAY['approval.approved'], 'unused')`,
      [org.orgId],
    );
    await client.query(
      `INSERT INTO outbox_messages (org_id, event_id, event_type, body, relayed_at)
       SELECT $1, gen_random_uuid(), 'approval.approved', '{}', now() FROM generate_series(1, 5001)`,
      [org.orgId],
    );
    await client.query(
      `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, next_attempt_at)
       SELECT gen_random_uuid(), o.org_id, e.id, o.event_id, o.event_type, now()
       FROM outbox_messages o JOIN webhook_endpoints e ON e.org_id = o.org_id AND o.event_type = ANY (e.events) WHERE o.org_id = $1`,
      [org.orgId],
    );
    const { rows } = await client.query<{ eventId: string }>(
      `DELETE FROM webhook_deliveries WHERE id = (SELECT id FROM webhook_deliveries WHERE org_id = $1 LIMIT 1) RETURNING event_id AS "eventId"`,
      [org.orgId],
    );
    freshEventId = rows[0]!.eventId;
    await client.query(
      `UPDATE webhook_deliveries SET status = 'succeeded', attempt_count = 1, next_attempt_at = NULL, completed_at = now()`,
    );
  });
  afterAll(() => session.client.end());

  it("the relay's fan-out reads an event's deliveries by the event, not through the pending ones", async () => {
    session.plans.length = 0;
    const pending = await new DeliveryStore(env.services.db, poolSql(session.client)).fanOut([freshEventId]);
    expect(pending).toHaveLength(1);
    const plans = plansOver(session.plans, 'webhook_deliveries');
    expect(plans).toHaveLength(1);
    expect(plans[0], plans[0]).toMatch(/Index Scan (using|on) webhook_deliveries_event_id_endpoint_id_key/);
    expect(plans[0], plans[0]).not.toMatch(/webhook_deliveries_pending_next_attempt_at_idx/);
  });
});

describe('query plans, while the index of consumer tasks by status is full of finished ones', () => {
  let session: { client: pg.Client; plans: string[] };

  beforeAll(async () => {
    session = await explainingSession('consumer_tasks');
    const { client } = session;
    await client.query(
      `INSERT INTO consumer_tasks (event_id, consumer, org_id) SELECT gen_random_uuid(), 'approval-mail', $1 FROM generate_series(1, 5000)`,
      [org.orgId],
    );
    await client.query(`UPDATE consumer_tasks SET status = 'done', completed_at = now()`);
  });
  afterAll(() => session.client.end());

  it("recording a consumer's tasks reads them by event and consumer", async () => {
    session.plans.length = 0;
    const event = { id: randomUUID(), orgId: org.orgId } as DomainEvent;
    expect(await new ConsumerTaskStore(poolSql(session.client)).create('approval-mail', [event])).toEqual([event.id]);
    const plans = plansOver(session.plans, 'consumer_tasks');
    expect(plans).toHaveLength(1);
    expect(plans[0], plans[0]).toMatch(/Index Scan (using|on) consumer_tasks_pkey/);
    expect(plans[0], plans[0]).not.toMatch(/consumer_tasks_status_created_at_idx|Seq Scan on consumer_tasks/);
  });
});
