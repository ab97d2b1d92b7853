import { auditCheckpointsConsumer } from './audit-checkpoints/audit-checkpoints.js';
import { approvalMailConsumer } from './approval-mail/approval-mail.js';
import type { EventConsumer } from './consumer.js';
import { endpointDisabledAlertConsumer } from './endpoint-disabled-alert/endpoint-disabled-alert.js';
import { liveUpdatesConsumer } from './live-updates/live-updates.js';
import { memberInviteMailConsumer } from './member-invite-mail/member-invite-mail.js';
import { orphanAlertConsumer } from './orphan-alert/orphan-alert.js';
import { reminderScheduleConsumer } from './approval-reminders/reminder-schedule.js';
import { slackPostConsumer } from './slack/slack-post.js';
import { slackUpdateConsumer } from './slack/slack-update.js';
import { pushNotifyConsumer } from './push/push-notify.js';
import { teamsPostConsumer } from './teams/teams-post.js';
import { teamsUpdateConsumer } from './teams/teams-update.js';
import { webhookConsumer } from './webhooks/webhook-delivery.js';

/** Every consumer of domain events; the outbox relay hands each event to those subscribed to it. */
export const CONSUMERS: readonly EventConsumer<any>[] = [
  webhookConsumer,
  orphanAlertConsumer,
  endpointDisabledAlertConsumer,
  memberInviteMailConsumer,
  liveUpdatesConsumer,
  approvalMailConsumer,
  slackPostConsumer,
  slackUpdateConsumer,
  teamsPostConsumer,
  teamsUpdateConsumer,
  pushNotifyConsumer,
  reminderScheduleConsumer,
  auditCheckpointsConsumer,
];
