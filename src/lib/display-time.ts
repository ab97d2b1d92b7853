/**
 * Times in mail and server-rendered pages, whose reader's zone the server does not know: written
 * in UTC, saying so ("29 Nov 2026, 14:05:09 UTC"), rather than as raw ISO 8601. The console shows
 * times in the reader's own zone instead (see docs/members-and-channels.md#the-console).
 */
const UTC_TIME = new Intl.DateTimeFormat('en-GB', {
  timeZone: 'UTC',
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

export function formatUtc(iso: string): string {
  return `${UTC_TIME.format(new Date(iso))} UTC`;
}
