import { inviteNotice } from '../../modules/members/invite-notice.js';
import { adminMailOptions } from '../admin-notice-mail.js';
import { defineEventHandler } from '../consumer.js';

/**
 * A new member gets their invite by mail. The link is a fresh invite of its own (the API's answer
 * holds another): invite tokens are stored only as hashes, so no token travels through the outbox
 * or Redis. A retried mail replaces the invite it sent before.
 */
export const memberInviteMailConsumer = defineEventHandler({
  name: 'member-invite-mail',
  events: ['member.created'],
  options: adminMailOptions,
  handle:
    ({ db, members, mailer, logger }) =>
    async (event) => {
      const org = await db.organization.findUnique({ where: { id: event.orgId } });
      const invite = org && (await members.inviteForMail(event.orgId, String(event.data.memberId), event.id));
      if (!org || !invite) return { skipped: 'member gone, or signed up already' };
      await mailer.send({ to: [invite.member.email], ...inviteNotice(org, invite.member, invite.inviteUrl) });
      logger.info({ orgId: event.orgId, memberId: invite.member.id }, 'invite mailed');
      return { sent: 1 };
    },
});
