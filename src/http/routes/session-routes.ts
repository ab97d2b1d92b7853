import type { RequestHandler } from 'express';
import type { MemberService, SignedIn } from '../../modules/members/member-service.js';
import {
  inviteAcceptSchema,
  invitePreviewInputSchema,
  invitePreviewSchema,
  sessionViewSchema,
  signInSchema,
} from '../../modules/members/member-schemas.js';
import { slackLinkInputSchema, slackLinkPreviewSchema } from '../../modules/slack/slack-schemas.js';
import { teamsLinkInputSchema } from '../../modules/teams/teams-schemas.js';
import { problemSchema } from '../problem-schema.js';
import { defineRoute, type Reply } from '../route.js';
import { problemResponses } from './problem-responses.js';

/** The session's view for the API, and its cookie for the browser. */
function signedIn({ sessionToken, expiresAt, ...view }: SignedIn): Reply {
  return { status: 200, body: view, session: { token: sessionToken, expiresAt } };
}

/** The refusals of the routes that open a session (see cookie-setting-guards.ts), for the reference. */
const cookieSettingResponses = {
  403: { description: 'The request came from a page of another origin than PUBLIC_URL (`csrf_failed`).', schema: problemSchema },
  ...problemResponses(415, 429, 503),
};

/** `cookieSettingGuards`: what sign-in and invite acceptance refuse before reading the body. */
export function sessionRoutes(members: MemberService, cookieSettingGuards: readonly RequestHandler[]) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/session',
      summary: 'Sign in to the console with email and password',
      auth: 'public',
      guards: cookieSettingGuards,
      body: signInSchema,
      responses: {
        200: { description: 'Signed in: the session cookie is set.', schema: sessionViewSchema },
        ...problemResponses(401, 422),
        ...cookieSettingResponses,
      },
      handler: async ({ body }) => signedIn(await members.signIn(body)),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/session',
      summary: 'The signed-in member and the CSRF token of the session',
      auth: 'session',
      responses: { 200: { description: 'The session.', schema: sessionViewSchema }, ...problemResponses(401) },
      handler: async ({ tenant }) => ({ status: 200, body: await members.sessionView(tenant) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/session',
      summary: 'Sign out: the session ends on the server',
      auth: 'session',
      responses: { 204: { description: 'Signed out.' }, ...problemResponses(401, 403) },
      handler: async ({ tenant }) => {
        await members.signOut(tenant);
        return { status: 204, session: 'clear' };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/session/slack-link/preview',
      summary: 'What a link sent in Slack would link to the signed-in member; nothing is used up',
      auth: 'session',
      body: slackLinkInputSchema,
      responses: {
        200: { description: 'The Slack account of the link.', schema: slackLinkPreviewSchema },
        ...problemResponses(401, 403, 409, 410, 422),
      },
      handler: async ({ tenant, body }) => ({ status: 200, body: await members.previewSlackLink(tenant, body.token) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/session/slack-link',
      summary: 'Link the Slack account of a link sent in Slack to the signed-in member',
      auth: 'session',
      body: slackLinkInputSchema,
      responses: { 204: { description: 'Linked.' }, ...problemResponses(401, 403, 409, 410, 422) },
      handler: async ({ tenant, body }) => {
        await members.linkSlack(tenant, body.token);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/session/teams-link',
      summary: 'Link the Teams account (Entra object id) of a link shown on a Teams card to the signed-in member',
      auth: 'session',
      body: teamsLinkInputSchema,
      responses: { 204: { description: 'Linked.' }, ...problemResponses(401, 403, 409, 410, 422) },
      handler: async ({ tenant, body }) => {
        await members.linkTeams(tenant, body.token);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/invites/preview',
      summary: 'What an invite joins (organization, role, email); nothing is used up',
      auth: 'public',
      body: invitePreviewInputSchema,
      responses: {
        200: { description: 'The invite is usable.', schema: invitePreviewSchema },
        ...problemResponses(410, 422),
      },
      handler: async ({ body }) => ({ status: 200, body: await members.previewInvite(body.token) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/invites/accept',
      summary: 'Accept an invite: set a password and sign in',
      auth: 'public',
      guards: cookieSettingGuards,
      body: inviteAcceptSchema,
      responses: {
        200: { description: 'Signed in: the session cookie is set.', schema: sessionViewSchema },
        ...problemResponses(410, 422),
        ...cookieSettingResponses,
      },
      handler: async ({ body }) => signedIn(await members.acceptInvite(body)),
    }),
  ];
}
