import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSUMER_TASK_COLUMNS } from '../src/consumers/consumer-task-store.js';
import type { ColumnMap } from '../src/data/columns.js';
import type { Approval, Member, Policy } from '../src/generated/prisma/client.js';
import { APPROVAL_COLUMNS } from '../src/modules/approvals/approval-store.js';
import { STANDING_APPROVAL_COLUMNS } from '../src/modules/approvals/standing-approval-store.js';
import {
  AUDIT_CHAIN_HEAD_COLUMNS,
  AUDIT_CHECKPOINT_COLUMNS,
  AUDIT_EVENT_COLUMNS,
  AUDIT_EXPORT_CHUNK_COLUMNS,
  AUDIT_EXPORT_COLUMNS,
  AUDIT_SIGNING_KEY_COLUMNS,
  AUDIT_TREE_COLUMNS,
  AUDIT_TREE_NODE_COLUMNS,
} from '../src/modules/audit/audit-columns.js';
import { VERIFIED_RANGE_COLUMNS } from '../src/modules/audit/audit-query-store.js';
import { DECISION_LINK_COLUMNS } from '../src/modules/links/decision-link-store.js';
import { MEMBER_COLUMNS, SESSION_COLUMNS } from '../src/modules/members/member-columns.js';
import { SIGN_IN_ATTEMPT_COLUMNS } from '../src/modules/members/member-store.js';
import { NOTIFICATION_COLUMNS } from '../src/modules/notifications/notification-store.js';
import { APPROVAL_REMINDER_COLUMNS } from '../src/modules/notifications/reminder-store.js';
import { OUTBOX_MESSAGE_COLUMNS } from '../src/modules/outbox/outbox-columns.js';
import { API_KEY_COLUMNS, ORGANIZATION_COLUMNS } from '../src/modules/orgs/org-columns.js';
import { SLACK_INTEGRATION_COLUMNS, SLACK_LINK_TOKEN_COLUMNS } from '../src/modules/slack/slack-columns.js';
import { TEAMS_INTEGRATION_COLUMNS, TEAMS_LINK_TOKEN_COLUMNS } from '../src/modules/teams/teams-columns.js';
import { WEBHOOK_DELIVERY_COLUMNS, WEBHOOK_ENDPOINT_COLUMNS } from '../src/modules/webhooks/webhook-columns.js';
import { POLICY_COLUMNS, PUT_POLICY_COLUMNS } from '../src/modules/policies/policy-store.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

/** Every table read with raw SQL, and the map its statements are built from. */
const MAPPED_TABLES: Record<string, ColumnMap<unknown>> = {
  api_keys: API_KEY_COLUMNS,
  approval_notifications: NOTIFICATION_COLUMNS,
  approval_reminders: APPROVAL_REMINDER_COLUMNS,
  approvals: APPROVAL_COLUMNS,
  audit_chain_heads: AUDIT_CHAIN_HEAD_COLUMNS,
  audit_checkpoints: AUDIT_CHECKPOINT_COLUMNS,
  audit_events: AUDIT_EVENT_COLUMNS,
  audit_export_chunks: AUDIT_EXPORT_CHUNK_COLUMNS,
  audit_exports: AUDIT_EXPORT_COLUMNS,
  audit_signing_keys: AUDIT_SIGNING_KEY_COLUMNS,
  audit_tree_nodes: AUDIT_TREE_NODE_COLUMNS,
  audit_trees: AUDIT_TREE_COLUMNS,
  consumer_tasks: CONSUMER_TASK_COLUMNS,
  decision_links: DECISION_LINK_COLUMNS,
  members: MEMBER_COLUMNS,
  organizations: ORGANIZATION_COLUMNS,
  outbox_messages: OUTBOX_MESSAGE_COLUMNS,
  policies: POLICY_COLUMNS,
  sessions: SESSION_COLUMNS,
  slack_integrations: SLACK_INTEGRATION_COLUMNS,
  slack_link_tokens: SLACK_LINK_TOKEN_COLUMNS,
  standing_approvals: STANDING_APPROVAL_COLUMNS,
  teams_integrations: TEAMS_INTEGRATION_COLUMNS,
  teams_link_tokens: TEAMS_LINK_TOKEN_COLUMNS,
  webhook_deliveries: WEBHOOK_DELIVERY_COLUMNS,
  webhook_endpoints: WEBHOOK_ENDPOINT_COLUMNS,
};

/** SQL functions returning rows (RETURNS TABLE), and the maps their callers read the rows with. */
const MAPPED_FUNCTIONS: Record<string, ColumnMap<unknown>> = {
  ag_claim_sign_in_attempt: SIGN_IN_ATTEMPT_COLUMNS,
  ag_put_policy: PUT_POLICY_COLUMNS,
  ag_verify_audit_range: VERIFIED_RANGE_COLUMNS,
};

/**
 * Tables whose rows raw SQL never reads (it writes them, deletes from them, tests that a row exists,
 * or, for approval_votes, folds them into the JSON of the approval view): Prisma's own types keep
 * their reads whole. A new table must be put in one list or the other.
 */
const NOT_READ_WITH_RAW_SQL = [
  '_prisma_migrations',
  'approval_votes',
  'member_invites',
  'monthly_usage',
  'push_subscriptions',
  'policy_version_counters',
  'policy_versions',
  'sign_in_failures',
  'webhook_attempts',
];

let env: TestEnv;
let tables: Map<string, string[]>;
let functions: Map<string, string[]>;

function grouped(rows: { name: string; column: string }[]): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const { name, column } of rows) byName.set(name, [...(byName.get(name) ?? []), column]);
  return byName;
}

beforeAll(async () => {
  env = await createTestEnv();
  const { sql } = env.services;
  tables = grouped(
    await sql.query(
      null,
      `SELECT table_name AS name, column_name AS "column" FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name IN (SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE')`,
      [],
    ),
  );
  functions = grouped(
    await sql.query(
      null,
      `SELECT r.routine_name AS name, p.parameter_name AS "column"
       FROM information_schema.routines r JOIN information_schema.parameters p ON p.specific_name = r.specific_name
       WHERE r.routine_schema = 'public' AND p.parameter_mode = 'OUT' ORDER BY p.ordinal_position`,
      [],
    ),
  );
});
afterAll(() => env.close());

describe('rows read with raw SQL', () => {
  it('every table of the database is mapped, or read with Prisma only', () => {
    const classified = [...Object.keys(MAPPED_TABLES), ...NOT_READ_WITH_RAW_SQL];
    expect([...tables.keys()].sort()).toEqual(classified.sort());
  });

  it.each(Object.entries(MAPPED_TABLES))('the map of %s names every column of the table, and only those', (table, columns) => {
    expect(Object.values<string>(columns).sort()).toEqual(tables.get(table)?.sort());
  });

  it.each(Object.entries(MAPPED_FUNCTIONS))('the map of %s names every column of its rows, and only those', (name, columns) => {
    expect(Object.values<string>(columns).sort()).toEqual(functions.get(name)?.sort());
  });

  it('a field the generated row type gains and the map does not name fails to compile', () => {
    // tsc checks these lines in `npm run lint`: if a map could leave a field out, the
    // expected errors would not happen and the lint would fail.
    // @ts-expect-error the approvals map does not name a new column
    const approvals: ColumnMap<Approval & { riskScore: number }> = APPROVAL_COLUMNS;
    // @ts-expect-error the policies map does not name a new column
    const policies: ColumnMap<Policy & { owner: string }> = POLICY_COLUMNS;
    // @ts-expect-error the members map does not name a new column
    const members: ColumnMap<Member & { title: string }> = MEMBER_COLUMNS;
    expect([approvals, policies, members]).toHaveLength(3);
  });
});
