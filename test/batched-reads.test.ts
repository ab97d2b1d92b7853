import { describe, expect, it } from 'vitest';
import type { Sql } from '../src/data/database.js';
import { NotificationStore } from '../src/modules/notifications/notification-store.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

describe('reads that share one statement', () => {
  it('answers each request for its own key, and refuses a revoked or unknown key read in the same batch', async () => {
    const other = await env.createOrg();
    const readOnly = await env.createKey(org.orgId, ['approvals:read']);
    const revoked = await env.createKey(other.orgId, ['approvals:read', 'approvals:write']);
    await env.services.orgs.revokeApiKeyOf((await env.services.orgs.authenticate(other.key))!, revoked.id);
    const mine = (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201)).body.id;
    const theirs = (await other.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201)).body.id;

    const read = (key: string, id: string) => env.http.get(`/v1/approvals/${id}`).set('authorization', `Bearer ${key}`);
    const cases = [
      { key: org.key, id: mine, status: 200 },
      { key: other.key, id: theirs, status: 200 },
      { key: org.key, id: theirs, status: 404 },
      { key: other.key, id: mine, status: 404 },
      { key: readOnly.key, id: mine, status: 200 },
      { key: revoked.key, id: theirs, status: 401 },
      { key: `agk_${'B'.repeat(43)}`, id: mine, status: 401 },
    ];
    const all = Array.from({ length: 10 }, () => cases).flat();
    const answers = await Promise.all(all.map(({ key, id }) => read(key, id)));
    expect(answers.map((res) => res.status)).toEqual(all.map(({ status }) => status));
    for (const [i, res] of answers.entries()) if (res.status === 200) expect(res.body.id).toBe(all[i]!.id);

    // The read-only key shares its scope set with nobody that may write, and cannot write.
    await env.http
      .post('/v1/approvals')
      .set('authorization', `Bearer ${readOnly.key}`)
      .send({ action: 'x', payload: {}, policyKey: 'p' })
      .expect(403);
  });

  it("answers each channel's ask for its own organizations when the consumers of a relayed batch ask in one turn, in one statement", async () => {
    const [mail, slack, teams, push, none] = (await Promise.all(Array.from({ length: 5 }, () => env.createOrg()))) as [
      TestOrg,
      TestOrg,
      TestOrg,
      TestOrg,
      TestOrg,
    ];
    const sql = env.services.sql;
    const member = async (orgId: string, email: string, emailNotifications: boolean) =>
      (
        await sql.query<{ id: string }>(
          null,
          `INSERT INTO members (id, org_id, email, email_key, role, email_notifications)
           VALUES (gen_random_uuid(), $1, $2, $2, 'reviewer', $3) RETURNING id`,
          [orgId, email, emailNotifications],
        )
      )[0]!.id;
    await member(mail.orgId, 'mail@example.test', true);
    await member(none.orgId, 'quiet@example.test', false);
    await sql.query(
      null,
      `INSERT INTO slack_integrations (org_id, team_id, channel, bot_token, signing_secret, connected_at) VALUES ($1, 'T1', 'C1', 'xoxb', 's', now())`,
      [slack.orgId],
    );
    await sql.query(
      null,
      `INSERT INTO teams_integrations (org_id, app_id, app_secret, tenant_id, team_id, channel_id, connected_at) VALUES ($1, 'app', 'secret', 'tenant', 'team', 'channel', now())`,
      [teams.orgId],
    );
    await sql.query(
      null,
      `INSERT INTO push_subscriptions (id, org_id, member_id, endpoint, p256dh, auth) VALUES (gen_random_uuid(), $1, $2, 'https://push.example.test/1', 'k', 'a')`,
      [push.orgId, await member(push.orgId, 'push@example.test', false)],
    );

    const statements: (string | null)[] = [];
    const counting: Sql = { query: (name, text, values, options) => (statements.push(name), sql.query(name, text, values, options)) };
    const notifications = new NotificationStore(counting);
    const everyOrg = [mail, slack, teams, push, none].map((created) => created.orgId);
    const reached = async (asks: Promise<ReadonlySet<string>>[]) => (await Promise.all(asks)).map((orgs) => [...orgs]);

    // The consumers of a new request, as the relay runs them: every channel in one statement.
    expect(
      await reached((['email', 'slack', 'teams', 'push'] as const).map((channel) => notifications.orgsReachedThrough(channel, everyOrg))),
    ).toEqual([[mail.orgId], [slack.orgId], [teams.orgId], [push.orgId]]);
    expect(statements).toEqual(['orgs-reached-through-email-push-slack-teams']);

    // Two asks of one channel in a turn each hear of their own organizations only.
    statements.length = 0;
    expect(
      await reached([
        notifications.orgsReachedThrough('slack', [slack.orgId, teams.orgId]),
        notifications.orgsReachedThrough('slack', [mail.orgId]),
        notifications.orgsReachedThrough('teams', [slack.orgId]),
      ]),
    ).toEqual([[slack.orgId], [], []]);
    expect(statements).toEqual(['orgs-reached-through-slack-teams']);
  });

  it('never lets a shared scope set change', async () => {
    const tenant = (await env.services.orgs.authenticate(org.key))!;
    const scopes = tenant.scopes as Set<string>;
    expect(() => scopes.add('keys:write')).toThrow(TypeError);
    expect(() => scopes.delete('approvals:read')).toThrow(TypeError);
    expect(() => scopes.clear()).toThrow(TypeError);
    expect((await env.services.orgs.authenticate(org.key))!.scopes).toBe(scopes);
    expect(scopes.has('approvals:read')).toBe(true);
  });
});
