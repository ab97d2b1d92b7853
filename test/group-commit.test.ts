import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ApprovalStore } from '../src/modules/approvals/approval-store.js';
import { voteOn } from '../src/modules/approvals/approval-transitions.js';
import type { Vote } from '../src/modules/approvals/approval-types.js';
import { creationItem, voteItem } from '../src/modules/approvals/approval-writes.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { orphanCreation } from './support/orphans.js';
import { createTestEnv, useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

/** An orphan's creation as ApprovalWrites hands it to ag_write_batch, with `overrides` in its approval row. */
function orphanItem(orgId: string, action: string, overrides: Record<string, unknown> = {}) {
  const item = creationItem(orgId, orphanCreation(org.keyId, action), null);
  return { ...item, approval: { ...item.approval, ...overrides } };
}

/** An approving vote of the reviewer key on a new pending approval of `as`, as ApprovalWrites hands it to ag_write_batch. */
async function approvingVote(overrides: Partial<Vote> = {}, as: TestOrg = org) {
  const reviewer = { type: 'api_key' as const, id: as.reviewerKeyId };
  const { body } = await as.request('post', '/v1/approvals').send({ action: 'vote', payload: {}, policyKey: 'no-policy' }).expect(201);
  const approval = (await new ApprovalStore(env.services.db, env.services.sql, as.orgId).findById(body.id))!;
  const { vote, recorded, settling } = voteOn(approval, { verdict: 'approved' }, reviewer, new Date());
  return voteItem(as.orgId, body.id as string, reviewer, 'api', { ...vote, ...overrides }, recorded, settling);
}

async function writeVotes(items: ReturnType<typeof voteItem>[]): Promise<string[]> {
  const [row] = await env.services.sql.query<{ outcomes: string[] }>(null, "SELECT ag_write_batch('vote', $1::jsonb) AS outcomes", [
    JSON.stringify(items),
  ]);
  return row!.outcomes;
}

async function statuses(items: { id: string }[]): Promise<string[]> {
  const store = new ApprovalStore(env.services.db, env.services.sql, org.orgId);
  return Promise.all(items.map(async ({ id }) => (await store.findById(id))!.status));
}

describe('group commit', () => {
  it('commits the others of a batch when one of its creations fails, and answers each', async () => {
    const other = await env.createOrg();
    const items = [
      orphanItem(org.orgId, 'first'),
      orphanItem(org.orgId, 'broken', { status: 'no-such-status' }),
      orphanItem(other.orgId, 'elsewhere'),
      orphanItem(org.orgId, 'last'),
    ];
    const [row] = await env.services.sql.query<{ outcomes: string[] }>(null, "SELECT ag_write_batch('create', $1::jsonb) AS outcomes", [
      JSON.stringify(items),
    ]);
    expect(row!.outcomes).toEqual(['created', expect.stringMatching(/^failed: 22P02 /), 'created', 'created']);

    const actions = (await env.services.db.approval.findMany({ where: { orgId: { in: [org.orgId, other.orgId] } } })).map((a) => a.action);
    expect(actions.sort()).toEqual(['elsewhere', 'first', 'last']);
    // The failed creation left no event behind: both chains are gap-free and recompute.
    for (const orgId of [org.orgId, other.orgId]) expect(chainProblem(await readChain(env.services.db, orgId))).toBeNull();
  });

  it('records in each approval the seq of the event that settled it, over the organizations of one batch', async () => {
    // Three organizations, one of them twice: each head moves within the batch, named by its place in it.
    const [second, third] = [await env.createOrg(), await env.createOrg()];
    const items = [await approvingVote({}, second), await approvingVote(), await approvingVote({}, third), await approvingVote({}, second)];
    expect(await writeVotes(items)).toEqual(['settled', 'settled', 'settled', 'settled']);
    for (const item of items) {
      const [row] = await env.services.sql.query<{ receiptSeq: string }>(
        null,
        'SELECT receipt_seq::text AS "receiptSeq" FROM approvals WHERE id = $1',
        [item.id],
      );
      const chain = await readChain(env.services.db, item.orgId);
      expect(chainProblem(chain)).toBeNull();
      const settledBy = chain.find((event) => event.type === 'approval.approved' && event.data.approvalId === item.id)!;
      expect(Number(row!.receiptSeq)).toBe(settledBy.seq);
    }
  });

  it('commits the others of a batch when one of its votes fails, and answers each', async () => {
    const items = [await approvingVote(), await approvingVote({ at: 'not a time' }), await approvingVote()];
    expect(await writeVotes(items)).toEqual(['settled', expect.stringMatching(/^failed: 22007 /), 'settled']);
    expect(await statuses(items)).toEqual(['approved', 'pending', 'approved']);
    expect(chainProblem(await readChain(env.services.db, org.orgId))).toBeNull();
  });

  it('answers not_pending to a vote whose deadline passes while it is cast, and commits the others of its batch', async () => {
    // The first vote fails, so the items run again one by one, each in a subtransaction of its own.
    const items = [await approvingVote({ at: 'not a time' }), await approvingVote(), await approvingVote()];
    const late = items[1]!.id;
    // The late vote's approval reaches its deadline while the vote is inserted: the vote passed the
    // deadline check under the row lock, and its settlement finds the deadline reached (SQLSTATE
    // AG409). The trigger moves the deadline to the database's clock at that moment, so no wait
    // has to outlast a window. The sequence counts the inserts that moved the deadline; nextval
    // is not undone with a subtransaction.
    await env.services.db.$executeRawUnsafe('CREATE SEQUENCE deadline_votes');
    await env.services.db.$executeRawUnsafe(`
      CREATE FUNCTION reach_deadline() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.approval_id = '${late}' THEN
          PERFORM nextval('deadline_votes');
          UPDATE approvals SET expires_at = clock_timestamp() WHERE id = NEW.approval_id;
        END IF;
        RETURN NEW;
      END $$`);
    await env.services.db.$executeRawUnsafe(
      'CREATE TRIGGER reach_deadline BEFORE INSERT ON approval_votes FOR EACH ROW EXECUTE FUNCTION reach_deadline()',
    );
    try {
      expect(await writeVotes(items)).toEqual([expect.stringMatching(/^failed: 22007 /), 'not_pending', 'settled']);
      const [moved] = await env.services.db.$queryRaw<
        { last_value: bigint; is_called: boolean }[]
      >`SELECT last_value, is_called FROM deadline_votes`;
      expect(moved).toEqual({ last_value: 1n, is_called: true });
    } finally {
      await env.services.db.$executeRawUnsafe('DROP TRIGGER reach_deadline ON approval_votes');
      await env.services.db.$executeRawUnsafe('DROP FUNCTION reach_deadline()');
      await env.services.db.$executeRawUnsafe('DROP SEQUENCE deadline_votes');
    }
    expect(await statuses(items)).toEqual(['pending', 'pending', 'approved']);
    expect(await env.services.db.approvalVote.count({ where: { approvalId: late } })).toBe(0);
    expect(chainProblem(await readChain(env.services.db, org.orgId))).toBeNull();
  });

  it('writes a chain head once per batch, and a rolled-back item leaves it where it was', async () => {
    const { orgId } = await env.createOrg();
    const client = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await client.connect();
    const head = async () =>
      (await client.query<{ seq: string; hash: string }>('SELECT seq, hash FROM audit_chain_heads WHERE org_id = $1', [orgId])).rows[0]!;
    const append = (action: string) =>
      client.query<{ seq: string }>('SELECT ag_append_audit_events($1, $2::jsonb) AS seq', [
        orgId,
        JSON.stringify(orphanItem(orgId, action).events),
      ]);
    const takeHead = async () => (await client.query<{ took: boolean }>('SELECT ag_take_chain_head($1) AS took', [orgId])).rows[0]!.took;
    try {
      const before = await head();
      await client.query('BEGIN');
      await client.query('SELECT ag_lock_chain_heads($1), ag_defer_chain_heads($1)', [[orgId]]);
      // The batch holds the head: a write path's ag_take_chain_head does not take it again.
      expect(await takeHead()).toBe(false);
      await append('kept');
      await client.query('SAVEPOINT item');
      await append('rolled back');
      await client.query('ROLLBACK TO SAVEPOINT item');
      await append('kept too');
      // Until the batch ends, the head row is not touched: its moves are in the transaction's settings.
      expect(await head()).toEqual(before);
      await client.query('SELECT ag_write_chain_heads()');
      await client.query('COMMIT');

      const chain = await readChain(env.services.db, orgId);
      expect(chainProblem(chain)).toBeNull();
      expect(chain.filter((event) => event.type === 'approval.created').map((event) => event.data.action)).toEqual(['kept', 'kept too']);
      expect(await head()).toEqual({ seq: String(chain.at(-1)!.seq), hash: chain.at(-1)!.hash });

      // Outside a batch, in the same session, the head is taken again and an append writes the row,
      // answering the seq of its last event.
      await client.query('BEGIN');
      expect(await takeHead()).toBe(true);
      const appended = (await append('single')).rows[0]!.seq;
      await client.query('COMMIT');
      const after = await readChain(env.services.db, orgId);
      expect(chainProblem(after)).toBeNull();
      expect(appended).toBe(String(after.at(-1)!.seq));
      expect(await head()).toEqual({ seq: String(after.at(-1)!.seq), hash: after.at(-1)!.hash });
    } finally {
      await client.end();
    }
  });

  it('decides quota and idempotency per request inside a batch, under concurrent load', async () => {
    const env = await createTestEnv({
      FREE_TIER_MONTHLY_APPROVALS: '10',
      WRITE_BATCH_IN_FLIGHT: '1',
      METRICS_TOKEN: 'metrics-token-0123456789',
    });
    try {
      const free = await env.createOrg({ plan: 'free' });
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          free
            .request('post', '/v1/approvals')
            .send({ action: `a${i}`, payload: {}, policyKey: 'p', ...(i % 4 === 0 ? { idempotencyKey: 'same' } : {}) }),
        ),
      );
      const statuses = responses.map((res) => res.status);
      // Ten made it under the limit; the replays of the one idempotency key that was created are 201 too.
      const created = await env.services.db.approval.count({ where: { orgId: free.orgId } });
      expect(created).toBe(10);
      expect(statuses.filter((status) => status === 402).length + statuses.filter((status) => status === 201).length).toBe(40);
      const ids = new Set(responses.filter((res) => res.status === 201).map((res) => res.body.id as string));
      expect(ids.size).toBe(10);
      expect(chainProblem(await readChain(env.services.db, free.orgId))).toBeNull();

      // Requests shared commits: some batch held more than one.
      const metrics = (await env.http.get('/metrics').set('authorization', 'Bearer metrics-token-0123456789').expect(200)).text;
      const value = (prefix: string, ...labels: string[]) => {
        const line = metrics
          .split('\n')
          .find((candidate) => candidate.startsWith(prefix) && labels.every((label) => candidate.includes(label)));
        return Number(line?.split(' ').pop());
      };
      const single = value('approval_gate_write_batch_size_bucket{', 'le="1"', 'operation="create"');
      const all = value('approval_gate_write_batch_size_count{', 'operation="create"');
      expect(all).toBeGreaterThan(single);
      // Every batch is timed too, from its start to its answer.
      expect(value('approval_gate_write_batch_seconds_count{', 'operation="create"')).toBe(all);
      expect(value('approval_gate_write_batch_seconds_sum{', 'operation="create"')).toBeGreaterThan(0);
    } finally {
      await env.close();
    }
  });

  it('settles an approval once when two votes of its quorum arrive in one batch', async () => {
    await org.request('put', '/v1/policies/two').send({ quorum: 2 }).expect(200);
    const third = await env.createKey(org.orgId, ['approvals:decide', 'approvals:read']);
    for (let round = 0; round < 5; round++) {
      const { body } = await org.request('post', '/v1/approvals').send({ action: 'x', payload: { round }, policyKey: 'two' }).expect(201);
      const votes = await Promise.all([
        org.asReviewer('post', `/v1/approvals/${body.id}/decision`).send({ verdict: 'approved' }),
        env.http.post(`/v1/approvals/${body.id}/decision`).set('authorization', `Bearer ${third.key}`).send({ verdict: 'approved' }),
      ]);
      expect(votes.map((res) => res.status)).toEqual([200, 200]);
      const chain = await readChain(env.services.db, org.orgId);
      expect(chain.filter((event) => event.data.approvalId === body.id).map((event) => event.type)).toEqual([
        'approval.created',
        'approval.vote_recorded',
        'approval.approved',
      ]);
    }
  });
});
