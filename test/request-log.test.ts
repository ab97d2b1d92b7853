import { describe, expect, it } from 'vitest';
import { redactPathTokens } from '../src/http/request-log.js';
import { nonceOf, pathOf } from './support/decision-links.js';
import { createMember, inviteToken } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

const lastSegment = (url: string) => new URL(url).pathname.split('/').pop()!;

describe('tokens in paths', () => {
  it('never reach a log line: decision links, invites and Slack self-links opened, posted and used', async () => {
    const reviewer = await createMember(env, org, 'reviewer');
    await org.request('put', '/v1/policies/review').send({}).expect(200);
    const approval = await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }).expect(201);
    const links = await env.services.decisionLinks.issue(org.orgId, approval.body, reviewer.id);
    const invited = await org.request('post', '/v1/members').send({ email: 'newcomer@acme.test', role: 'viewer' }).expect(201);
    const slackLink = await env.services.members.issueSlackLink(org.orgId, 'T0LOGS', 'U0LOGS');
    const tokens = {
      decision: lastSegment(links.approve),
      unusedDecision: lastSegment(links.reject),
      invite: inviteToken(invited.body.inviteUrl),
      slack: lastSegment(slackLink),
    };

    const page = await env.http.get(pathOf(links.approve)).expect(200);
    await env.http.head(pathOf(links.approve)).expect(200);
    await env.http
      .post(pathOf(links.approve))
      .type('form')
      .send({ nonce: nonceOf(page.text) })
      .expect(200);
    // A mistyped case still reaches the link (routes ignore case); a query string stays.
    await env.http.get(`/D/${tokens.unusedDecision}?from=mail`).expect(200);
    await env.http.get(`/console/invite/${tokens.invite}`);
    await env.http.post('/v1/invites/accept').send({ token: tokens.invite, password: 'a long enough password' }).expect(200);
    await env.http.get(`/console/link-slack/${tokens.slack}`);
    await reviewer.request('post', '/v1/session/slack-link').send({ token: tokens.slack }).expect(204);

    const lines = env.logs.map((line) => JSON.stringify(line));
    for (const [name, token] of Object.entries(tokens)) {
      expect(
        lines.filter((line) => line.includes(token)),
        `${name} token in the log`,
      ).toEqual([]);
    }
    const logged = env.logs.map((line) => line.msg);
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^GET \/d\/:token 200 \d+ ms$/),
        expect.stringMatching(/^HEAD \/d\/:token 200 \d+ ms$/),
        expect.stringMatching(/^POST \/d\/:token 200 \d+ ms$/),
        expect.stringMatching(/^GET \/D\/:token\?from=mail 200 \d+ ms$/),
        expect.stringMatching(/^GET \/console\/invite\/:token \d+ \d+ ms$/),
        expect.stringMatching(/^GET \/console\/link-slack\/:token \d+ \d+ ms$/),
      ]),
    );
    expect(env.logs).toContainEqual(expect.objectContaining({ req: expect.objectContaining({ method: 'POST', url: '/d/:token' }) }));
  });

  it('are replaced wherever the request line puts them, and nothing else is', () => {
    expect(redactPathTokens('/d/abc_DEF-123')).toBe('/d/:token');
    expect(redactPathTokens('/d/abc/extra?x=1')).toBe('/d/:token/extra?x=1');
    expect(redactPathTokens('/console/invite/abc#frag')).toBe('/console/invite/:token#frag');
    expect(redactPathTokens('/Console/Link-Slack/abc?a=b')).toBe('/Console/Link-Slack/:token?a=b');
    expect(redactPathTokens('http://gate.acme.test/d/abc')).toBe('http://gate.acme.test/d/:token');
    for (const kept of ['/v1/approvals/abc', '/dashboard/abc', '/console/approvals/abc', '/d/', '/console/invite']) {
      expect(redactPathTokens(kept)).toBe(kept);
    }
  });
});
