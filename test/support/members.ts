import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import type { TestEnv, TestOrg } from './test-env.js';

export interface TestMember {
  id: string;
  email: string;
  password: string;
  /** A supertest agent holding the member's session cookie. */
  agent: ReturnType<typeof supertest.agent>;
  csrfToken: string;
  /** The agent's request with the CSRF header of the session, as the console sends it. */
  request: (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string) => supertest.Test;
}

/** The token of an invite URL: its last path segment. */
export function inviteToken(inviteUrl: string): string {
  return new URL(inviteUrl).pathname.split('/').pop()!;
}

/**
 * A member of `org` with `role`, invited over the API with the org's key and signed in by
 * accepting the invite, as a person would.
 */
export async function createMember(
  env: TestEnv,
  org: TestOrg,
  role: 'admin' | 'reviewer' | 'viewer',
  email = `${role}-${randomBytes(4).toString('hex')}@acme.test`,
): Promise<TestMember> {
  const invited = await org.request('post', '/v1/members').send({ email, role }).expect(201);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const agent = supertest.agent(env.baseUrl);
  const accepted = await agent
    .post('/v1/invites/accept')
    .send({ token: inviteToken(invited.body.inviteUrl), password })
    .expect(200);
  const csrfToken = accepted.body.csrfToken as string;
  return {
    id: invited.body.member.id,
    email,
    password,
    agent,
    csrfToken,
    request: (method, path) => agent[method](path).set('x-csrf-token', csrfToken),
  };
}
