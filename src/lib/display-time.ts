/** Made at its first use, not at import: a process that writes no mail nor page touches no Intl (see display-count.ts). */
let utcTime: Intl.DateTimeFormat | undefined;

/**
 * Times in mail and server-rendered pages, whose reader's zone the server does not know: written
 * in UTC, saying so ("29 Nov 2026, 14:05:09 UTC"), rather than as raw ISO 8601. The console shows
 * times in the reader's own zone instead (see docs/members-and-channels.md#the-console).
 */
export function formatUtc(iso: string): string {
  utcTime ??= new Intl.DateTimeFormat('en-GB', {
    timeZone: 'UTC',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
  return `${utcTime.format(new Date(iso))} UTC`;
}
