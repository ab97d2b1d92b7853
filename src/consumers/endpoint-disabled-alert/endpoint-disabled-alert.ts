import { endpointDisabledNotice } from '../../modules/orgs/admin-notices.js';
import { adminMailOptions, mailAdmins } from '../admin-notice-mail.js';
import { defineEventHandler } from '../consumer.js';

/**
 * The service disabled a webhook endpoint (410 Gone, or five days of failures): the
 * organization's admins are told why and how to turn it back on. A user's own PATCH is not news
 * to them, so only the system's changes count.
 */
export const endpointDisabledAlertConsumer = defineEventHandler({
  name: 'endpoint-disabled-alert',
  events: ['webhook.updated'],
  accepts: (event) => event.actor?.type === 'system' && event.data.enabled === false,
  options: adminMailOptions,
  handle: (services) => (event) =>
    mailAdmins(services, event.orgId, 'endpoint-disabled', async (org) => {
      const endpoint = await services.db.webhookEndpoint.findFirst({ where: { id: String(event.data.endpointId), orgId: event.orgId } });
      return endpoint && endpointDisabledNotice(org, endpoint, String(event.data.reason));
    }),
});
