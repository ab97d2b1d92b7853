import { auditCheckpointsConsumer } from './audit-checkpoints/audit-checkpoints.js';
import type { EventConsumer } from './consumer.js';
import { endpointDisabledAlertConsumer } from './endpoint-disabled-alert/endpoint-disabled-alert.js';
import { liveUpdatesConsumer } from './live-updates/live-updates.js';
import { memberInviteMailConsumer } from './member-invite-mail/member-invite-mail.js';
import { orphanAlertConsumer } from './orphan-alert/orphan-alert.js';
import { webhookConsumer } from './webhooks/webhook-delivery.js';

/** Every consumer of domain events; the outbox relay hands each event to those subscribed to it. */
export const CONSUMERS: readonly EventConsumer<any>[] = [
  webhookConsumer,
  orphanAlertConsumer,
  endpointDisabledAlertConsumer,
  memberInviteMailConsumer,
  liveUpdatesConsumer,
  auditCheckpointsConsumer,
];
