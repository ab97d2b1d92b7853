import { ReminderStore } from '../../modules/notifications/reminder-store.js';
import type { EventConsumer } from '../consumer.js';

/**
 * Schedules the first reminder of every pending revision whose policy reminds
 * (docs/members-and-channels.md#reminders), straight from the relay: the schedule is a row in
 * PostgreSQL, written before the events are marked relayed, and writing it again changes nothing.
 * The reminder watchers of the workers find it when it falls due.
 */
export const reminderScheduleConsumer: EventConsumer<unknown> = {
  name: 'reminder-schedule',
  events: ['approval.created', 'approval.revised'],
  accepts: (event) => event.data.status === 'pending',
  async plan(events, { sql }) {
    await new ReminderStore(sql).schedule(events.map((event) => String(event.data.approvalId)));
    return [];
  },
};
