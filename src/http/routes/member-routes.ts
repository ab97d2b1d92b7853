import type { MemberService } from '../../modules/members/member-service.js';
import {
  delegationInputSchema,
  memberCreatedSchema,
  memberCreateSchema,
  memberIdParamsSchema,
  memberListSchema,
  memberSelfUpdateSchema,
  memberUpdateSchema,
  memberViewSchema,
} from '../../modules/members/member-schemas.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

/** `mailTransport` says whether invites are mailed, so the answer never claims a mail that will not be sent. */
export function memberRoutes(members: MemberService, mailTransport: 'smtp' | 'log') {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/members',
      summary: "List the organization's members",
      scope: 'members:read',
      responses: { 200: { description: 'Every member.', schema: memberListSchema }, ...problemResponses(401, 403) },
      handler: async ({ tenant }) => ({ status: 200, body: { members: await members.list(tenant) } }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/members',
      summary: 'Invite a member; the invite is also mailed when the service has a mail server',
      scope: 'members:write',
      body: memberCreateSchema,
      responses: {
        201: { description: 'The member and its invite URL (single-use, valid 7 days).', schema: memberCreatedSchema },
        ...problemResponses(401, 403, 409, 422),
      },
      handler: async ({ tenant, body }) => ({
        status: 201,
        body: { ...(await members.create(tenant, body)), inviteMail: mailTransport === 'smtp' ? 'queued' : 'not_sent' },
      }),
    }),
    // Before /v1/members/:id, so that `me` is not taken for an id.
    defineRoute({
      method: 'patch',
      path: '/v1/members/me',
      summary: 'Change your own settings (email notifications)',
      auth: 'session',
      body: memberSelfUpdateSchema,
      responses: { 200: { description: 'You, changed.', schema: memberViewSchema }, ...problemResponses(401, 403, 422) },
      handler: async ({ tenant, body }) => ({ status: 200, body: await members.updateSelf(tenant, body) }),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/members/me/delegation',
      summary: 'Name who decides in your place while you are away',
      auth: 'session',
      body: delegationInputSchema,
      responses: { 200: { description: 'You, with your delegation.', schema: memberViewSchema }, ...problemResponses(401, 403, 422) },
      handler: async ({ tenant, body }) => ({ status: 200, body: await members.setDelegation(tenant, null, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/members/me/delegation',
      summary: 'End your delegation: you alone decide in your place again',
      auth: 'session',
      responses: { 200: { description: 'You, without a delegation.', schema: memberViewSchema }, ...problemResponses(401, 403) },
      handler: async ({ tenant }) => ({ status: 200, body: await members.setDelegation(tenant, null, null) }),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/members/:id/delegation',
      summary: "Name who decides in a member's place (for a member away who could not)",
      scope: 'members:write',
      params: memberIdParamsSchema,
      body: delegationInputSchema,
      responses: {
        200: { description: 'The member, with the delegation.', schema: memberViewSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await members.setDelegation(tenant, params.id, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/members/:id/delegation',
      summary: "End a member's delegation",
      scope: 'members:write',
      params: memberIdParamsSchema,
      responses: {
        200: { description: 'The member, without a delegation.', schema: memberViewSchema },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await members.setDelegation(tenant, params.id, null) }),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/members/:id',
      summary: "Change a member's role or name, or link their Slack identity",
      scope: 'members:write',
      params: memberIdParamsSchema,
      body: memberUpdateSchema,
      responses: {
        200: { description: 'The member, changed.', schema: memberViewSchema },
        ...problemResponses(401, 403, 404, 409, 422),
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await members.update(tenant, params.id, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/members/:id',
      summary: 'Remove a member; their sessions end at once',
      scope: 'members:write',
      params: memberIdParamsSchema,
      responses: { 204: { description: 'Removed.' }, ...problemResponses(401, 403, 404, 409) },
      handler: async ({ tenant, params }) => {
        await members.remove(tenant, params.id);
        return { status: 204 };
      },
    }),
  ];
}
