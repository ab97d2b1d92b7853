import { z } from 'zod';
import { storableString } from '../../lib/json-input.js';
import { ROLES } from '../orgs/tenant.js';
import { MIN_PASSWORD_LENGTH } from './passwords.js';

/** The longest a delegation may run: long enough for a sabbatical, short enough not to be forgotten. */
export const MAX_DELEGATION_DAYS = 365;

export const delegationViewSchema = z
  .object({
    delegateId: z.uuid().meta({ description: 'The member who decides in this one’s place.' }),
    startsAt: z.iso.datetime().nullable().meta({ description: 'From when; null: from when it was set.' }),
    endsAt: z.iso.datetime(),
  })
  .meta({ id: 'Delegation' });

export const delegationInputSchema = z
  .strictObject({
    delegateId: z.uuid().meta({ description: 'A member of the organization, not a viewer, not yourself.' }),
    startsAt: z.iso.datetime({ offset: true }).optional().meta({ description: 'From when (default: now).' }),
    endsAt: z.iso
      .datetime({ offset: true })
      .meta({ description: `Until when: in the future, after startsAt, at most ${MAX_DELEGATION_DAYS} days from now.` }),
  })
  .meta({ id: 'DelegationInput' });
export type DelegationInput = z.output<typeof delegationInputSchema>;

export const memberViewSchema = z
  .object({
    id: z.uuid(),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(ROLES),
    createdAt: z.iso.datetime(),
    lastSignInAt: z.iso.datetime().nullable(),
    slackLinked: z.boolean(),
    teamsLinked: z.boolean(),
    emailNotifications: z.boolean(),
    delegation: delegationViewSchema
      .nullable()
      .meta({ description: 'Who decides in this member’s place, while that runs or before it starts; null when no one does.' }),
  })
  .meta({ id: 'Member' });
export type MemberView = z.output<typeof memberViewSchema>;

const email = z.email().max(320);
const name = storableString('name').trim().min(1).max(200);
const password = z.string().min(MIN_PASSWORD_LENGTH, `password must be at least ${MIN_PASSWORD_LENGTH} characters`).max(1024);

export const memberCreateSchema = z.strictObject({ email, role: z.enum(ROLES), name: name.optional() }).meta({ id: 'MemberCreateInput' });
export type MemberCreateInput = z.output<typeof memberCreateSchema>;

export const slackIdentitySchema = z.strictObject({
  teamId: storableString('teamId').min(1).max(64),
  userId: storableString('userId').min(1).max(64),
});

export const teamsIdentitySchema = z.strictObject({
  aadObjectId: z
    .string()
    .regex(
      /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
      'aadObjectId must be an Entra object id (a GUID)',
    )
    .transform((value) => value.toLowerCase()),
});

export const memberUpdateSchema = z
  .strictObject({
    role: z.enum(ROLES).optional(),
    name: name.nullable().optional(),
    slack: slackIdentitySchema.nullable().optional().meta({ description: 'Links a Slack identity to the member, or clears it (null).' }),
    teams: teamsIdentitySchema
      .nullable()
      .optional()
      .meta({ description: 'Links a Teams user (Entra object id) to the member, or clears it (null).' }),
  })
  .meta({ id: 'MemberUpdateInput' });
export type MemberUpdateInput = z.output<typeof memberUpdateSchema>;

export const memberSelfUpdateSchema = z.strictObject({ emailNotifications: z.boolean() }).meta({ id: 'MemberSelfUpdateInput' });

export const memberCreatedSchema = z
  .object({
    member: memberViewSchema,
    inviteUrl: z.url(),
    inviteMail: z.enum(['queued', 'not_sent']).meta({
      description:
        '`queued`: the invite is mailed shortly; `not_sent`: the service has no mail server (SMTP_URL), so pass `inviteUrl` on yourself.',
    }),
  })
  .meta({ id: 'MemberCreated' });
export const memberListSchema = z.object({ members: z.array(memberViewSchema) }).meta({ id: 'MemberList' });
export const memberIdParamsSchema = z.object({ id: z.uuid() });

export const signInSchema = z
  .strictObject({
    email: storableString('email').min(1).max(320),
    password: z.string().min(1).max(1024),
    orgId: z.uuid().optional().meta({ description: 'Required when the email and password match members of several organizations.' }),
  })
  .meta({ id: 'SignInInput' });
export type SignInInput = z.output<typeof signInSchema>;

export const inviteAcceptSchema = z
  .strictObject({ token: storableString('token').min(1).max(200), password, name: name.optional() })
  .meta({ id: 'InviteAcceptInput' });
export type InviteAcceptInput = z.output<typeof inviteAcceptSchema>;

export const invitePreviewInputSchema = z.strictObject({ token: inviteAcceptSchema.shape.token }).meta({ id: 'InvitePreviewInput' });

/** What an invite joins, shown on the invite page before a password is chosen (see docs/members-and-channels.md). */
export const invitePreviewSchema = z
  .object({
    organization: z.string().meta({ description: "The organization's name." }),
    role: z.enum(ROLES),
    email: z.string().meta({ description: 'The email invited, which signs in afterwards.' }),
  })
  .meta({ id: 'InvitePreview' });
export type InvitePreview = z.output<typeof invitePreviewSchema>;

export const sessionViewSchema = z
  .object({
    member: memberViewSchema,
    csrfToken: z.string().meta({ description: 'Send as x-csrf-token on every write with this session.' }),
  })
  .meta({ id: 'Session' });
export type SessionView = z.output<typeof sessionViewSchema>;
